#include "util/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace kipp {
namespace {

constexpr auto kTerminalInterval = std::chrono::milliseconds(100);
constexpr auto kPlainInterval = std::chrono::seconds(10);
constexpr double kRateWarmupSeconds = 0.5;  // rate and ETA stay hidden until this much has passed

size_t terminal_width(std::FILE* out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 80;
}

// `value` with `decimals` digits after the point.
std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string percent(uint64_t done, uint64_t total) {
  return fixed(std::min(100.0, 100.0 * double(done) / double(total)), 0) + "%";
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return fixed(value, value < 10 ? 2 : value < 100 ? 1 : 0) + " " + units[unit];
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const uint64_t s = uint64_t(std::llround(seconds));
  char text[32];
  if (s < 60) std::snprintf(text, sizeof text, "%llus", (unsigned long long)s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%llum%02llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
  else
    std::snprintf(text, sizeof text, "%lluh%02llum", (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60));
  return text;
}

std::string format_bar_line(const std::string& label, uint64_t done, uint64_t total, double rate, size_t width) {
  std::string stats;
  if (total > 0) {
    stats += percent(done, total) + "  " + format_bytes(done) + "/" + format_bytes(total);
  } else {
    stats += format_bytes(done);
  }
  if (rate > 0) {
    stats += "  " + format_bytes(uint64_t(rate)) + "/s";
    if (total > done) stats += "  ETA " + format_eta(double(total - done) / rate);
  }
  // Whatever room is left after the label and the numbers goes to the bar (at most 30 cells).
  const size_t label_width = std::min<size_t>(label.size(), 44);
  const size_t fixed = label_width + 2 + stats.size();
  std::string line = label.substr(0, label_width) + "  ";
  if (total > 0 && width > fixed + 8) {
    const size_t cells = std::min<size_t>(30, width - fixed - 4);
    const size_t filled = size_t(double(cells) * std::min(1.0, double(done) / double(total)));
    line += "[" + std::string(filled, '#') + std::string(cells - filled, '.') + "]  ";
  }
  line += stats;
  if (line.size() > width - 1) line.resize(width - 1);
  return line;
}

std::string format_plain_line(const std::string& label, uint64_t done, uint64_t total, double rate) {
  std::string line = label + ": " + format_bytes(done);
  if (total > 0) line += " of " + format_bytes(total) + " (" + percent(done, total) + ")";
  if (rate > 0) {
    line += ", " + format_bytes(uint64_t(rate)) + "/s";
    if (total > done) line += ", ETA " + format_eta(double(total - done) / rate);
  }
  return line;
}

ProgressDisplay::ProgressDisplay(Mode mode, std::FILE* out) : mode_(mode), out_(out) {}

ProgressDisplay::Mode ProgressDisplay::mode_for(std::FILE* out) {
  return ::isatty(::fileno(out)) ? Mode::terminal : Mode::plain;
}

void ProgressDisplay::start(const std::string& label, uint64_t total, uint64_t already) {
  label_ = label;
  total_ = total;
  already_ = already;
  done_ = already;
  started_ = last_drawn_ = Clock::now();
  active_ = true;
  if (mode_ == Mode::terminal) draw();
}

double ProgressDisplay::rate() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
  if (elapsed < kRateWarmupSeconds || done_ <= already_) return 0;
  return double(done_ - already_) / elapsed;
}

void ProgressDisplay::update(uint64_t done) {
  if (!active_ || mode_ == Mode::off) return;
  done_ = done;
  const auto now = Clock::now();
  const auto interval = mode_ == Mode::terminal ? std::chrono::duration_cast<Clock::duration>(kTerminalInterval)
                                                : std::chrono::duration_cast<Clock::duration>(kPlainInterval);
  if (now - last_drawn_ < interval) return;
  last_drawn_ = now;
  draw();
}

void ProgressDisplay::draw() {
  if (mode_ == Mode::terminal) {
    const std::string line = format_bar_line(label_, done_, total_, rate(), terminal_width(out_));
    std::fprintf(out_, "\r\033[K%s", line.c_str());
    drawn_ = true;
  } else if (mode_ == Mode::plain) {
    std::fprintf(out_, "%s\n", format_plain_line(label_, done_, total_, rate()).c_str());
  }
  std::fflush(out_);
}

void ProgressDisplay::clear_line() {
  if (mode_ == Mode::terminal && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
    drawn_ = false;
  }
}

void ProgressDisplay::finish() {
  clear_line();
  active_ = false;
}

}  // namespace kipp
