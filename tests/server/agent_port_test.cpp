// The HAProxy agent: the weight it reports for a load, and the line a real TCP client reads.
#include "server/agent_port.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kipp::server {
namespace {

ReplicaLoad load(uint32_t running, uint32_t waiting, uint32_t blocks_used) {
  ReplicaLoad out;
  out.stats.running = running;
  out.stats.waiting = waiting;
  out.stats.pool.total = 100;
  out.stats.pool.free = 100 - blocks_used;
  out.max_waiting = 10;
  return out;
}

TEST(AgentReply, TheWeightFallsInStepsWithTheKvPoolOrTheQueue) {
  EXPECT_EQ(agent_reply(load(0, 0, 0)), "up ready 100%\n");
  EXPECT_EQ(agent_reply(load(4, 0, 49)), "up ready 100%\n");  // a full batch, nothing waiting: at its best
  EXPECT_EQ(agent_reply(load(1, 0, 50)), "up ready 50%\n");   // the KV pool half used
  EXPECT_EQ(agent_reply(load(4, 8, 20)), "up ready 25%\n");   // the queue 80% full
  EXPECT_EQ(agent_reply(load(4, 9, 20)), "up ready 1%\n");    // never 0%, which means drain
  EXPECT_EQ(agent_reply(load(4, 30, 100)), "up ready 1%\n");  // beyond full is still full
  ReplicaLoad draining = load(0, 0, 0);
  draining.draining = true;
  EXPECT_EQ(agent_reply(draining), "drain #draining\n");
}

TEST(AgentPort, EachConnectionReadsOneLineThenTheEnd) {
  int calls = 0;
  auto agent = AgentPort::create("127.0.0.1", 0, [&] { return "up " + std::to_string(50 + calls++) + "%\n"; });
  ASSERT_TRUE(agent) << agent.error().message;
  for (const char* expected : {"up 50%\n", "up 51%\n"}) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons((*agent)->port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    std::string received;
    char buffer[64];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) received.append(buffer, size_t(n));
    close(fd);
    EXPECT_EQ(received, expected);  // and read() saw the end: the agent closed the connection
  }
  auto taken = AgentPort::create("127.0.0.1", (*agent)->port(), [] { return std::string(); });
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message.find("cannot bind 127.0.0.1:"), std::string::npos) << taken.error().message;
}

}  // namespace
}  // namespace kipp::server
