// HAProxy's agent check (`agent-check agent-port P`): a TCP port that answers every connection
// with one line saying how the replica stands, then closes. The router then weighs replicas by
// their real load, not only by whether they answer /health:
//   "down #loading"   the model is still loading;
//   "drain #draining" SIGTERM came: no new requests, the running ones finish;
//   "up N%"           serving; N = 100 × (1 − load), at least 1 (0% would mean drain), where
//                     load is the largest of the KV pool's use, the queue's fill and the batch's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/scheduler.h"
#include "util/error.h"

namespace kipp::server {

struct ReplicaLoad {
  SchedulerStats stats;
  uint32_t max_waiting = 1;    // the queue's room
  uint32_t max_sequences = 1;  // sequences per step
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
