// What the scheduler holds per request and per sequence (a choice of a request), shared by its
// source files: scheduler.cpp (queueing, stepping, sampling, finishing) and admission.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "engine/answer_decoder.h"
#include "engine/prompt_lookup.h"
#include "scheduler/scheduler.h"

namespace kipp {

using SchedulerClock = std::chrono::steady_clock;

inline double seconds_between(SchedulerClock::time_point a, SchedulerClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Scheduler::Sequence {
  enum class State { waiting_for_first_choice, prefill, decode, done };

  Request* request = nullptr;
  uint32_t choice = 0;
  State state = State::prefill;
  std::unique_ptr<BackendSession> session;
  std::vector<uint32_t> blocks;  // block table: logical block -> pool block
  std::vector<uint32_t> tokens;  // the prompt, then every sampled token (the last not yet in the KV)
  uint32_t evaluated = 0;        // positions in the KV
  uint32_t published = 0;        // leading blocks published (or adopted, hence already published)
  uint64_t address = 0;          // content address of the last of them
  uint32_t reservation = 0;      // blocks promised by the pool, not yet taken
  uint32_t generated = 0;
  uint32_t chunk = 0;  // tokens this step evaluates for it: its prompt's next chunk, or its token and draft
  std::optional<AnswerDecoder> decoder;
  std::vector<float> logits;  // a row per evaluated token that wants one
  std::vector<float> hidden;  // a hidden_row request's row, written by its last prompt chunk
  // Speculation: the last sampled token then the draft, evaluated together; and when to draft.
  std::vector<uint32_t> draft_item;
  std::optional<SpeculationGate> gate;
};

struct Scheduler::Request {
  CompletionRequest spec;
  std::shared_ptr<RequestTicket> ticket;
  std::vector<std::unique_ptr<Sequence>> sequences;
  uint32_t shared_blocks = 0;  // full prompt blocks the other choices take from the first
  uint32_t finished = 0;
  RequestReport report;
  SchedulerClock::time_point submitted, admitted, first_token;
  bool has_first_token = false;
  uint32_t overtaken = 0;  // requests admitted past it while it was the oldest waiting
};

}  // namespace kipp
