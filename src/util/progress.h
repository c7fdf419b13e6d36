// How a long step looks while it runs: on a terminal, one line with a bar, bytes, rate and ETA
// redrawn in place; otherwise a plain line every few seconds (none for a step that ends sooner).
// It formats and throttles; it knows nothing of HTTP, files or hashes.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kipp {

std::string format_bytes(uint64_t bytes);  // "1.5 MiB"
std::string format_eta(double seconds);    // "42s", "3m07s", "2h05m"

// The terminal line: "LABEL [#####.....]  45%  1.2 GiB/2.7 GiB  56.3 MiB/s  ETA 27s", cut to `width`.
// total == 0 means unknown (no bar, no percentage, no ETA); rate <= 0 means not measured yet.
std::string format_bar_line(const std::string& label, uint64_t done, uint64_t total, double rate, size_t width);
// The plain line: "LABEL: 1.2 GiB of 2.7 GiB (45%), 56.3 MiB/s, ETA 27s".
std::string format_plain_line(const std::string& label, uint64_t done, uint64_t total, double rate);

class ProgressDisplay {
 public:
  enum class Mode { terminal, plain, off };
  ProgressDisplay(Mode mode, std::FILE* out);
  // terminal when `out` is a terminal, else plain.
  static Mode mode_for(std::FILE* out);

  // A new step: `already` bytes of `total` were done before it started (a resumed download);
  // the rate counts only what this step moves.
  void start(const std::string& label, uint64_t total, uint64_t already);
  void update(uint64_t done);
  // Ends the step; on a terminal the bar's line is cleared so the next message starts clean.
  void finish();
  // Clears the bar (if one is drawn) before someone else prints a line.
  void clear_line();

 private:
  using Clock = std::chrono::steady_clock;
  double rate() const;
  void draw();

  Mode mode_;
  std::FILE* out_;
  std::string label_;
  uint64_t total_ = 0, already_ = 0, done_ = 0;
  Clock::time_point started_, last_drawn_;
  bool drawn_ = false;
  bool active_ = false;
};

}  // namespace kipp
