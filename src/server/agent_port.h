// HAProxy's agent check (`agent-check agent-port P`): a TCP port that answers every connection
// with one line saying how the replica stands, then closes. The router then weighs replicas by
// their real load, not only by whether they answer /health:
//   "down #loading"   the model is still loading;
//   "drain #draining" SIGTERM came: no new requests, the running ones finish;
//   "up N%"           serving; N falls in coarse steps with the load, the larger of the KV
//                     pool's use and the queue's fill: 100% below half, 50% below three
//                     quarters, 25% below 90%, then 1% (never 0%, which would mean drain).
// The steps are coarse on purpose. Under `hash-type consistent` a weight change moves keys on
// the ring, so a weight that followed every step of a busy replica would move conversations away
// from the KV they left there. The batch's fill is left out for the same reason: a full batch
// with nothing waiting is a replica at its best, and HAProxy's hash-balance-factor already bounds
// the requests in progress per replica.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "scheduler/scheduler.h"
#include "util/error.h"

namespace kipp::server {

struct ReplicaLoad {
  SchedulerStats stats;
  uint32_t max_waiting = 1;  // the queue's room
  bool draining = false;
};

// The agent's line for a serving replica (newline included).
std::string agent_reply(const ReplicaLoad& load);

class AgentPort {
 public:
  // Listens on host:port (0 picks a free one) and answers each connection with `reply()`, called
  // on the agent's own thread.
  static Result<std::unique_ptr<AgentPort>> create(const std::string& host, uint16_t port,
                                                   std::function<std::string()> reply);
  virtual ~AgentPort() = default;  // stops listening and joins the thread
  virtual uint16_t port() const = 0;
};

}  // namespace kipp::server
