// `kipp logits --dump-steps DIR`: every named intermediate (backend/forward_steps.h) a backend
// records, gathered in memory and written as one raw little-endian FP32 file per step and layer
// ([positions][width], rows in position order) with a steps.json that lists them. The NumPy
// oracle writes the same layout (qwen3_reference.py --intermediates), and
// tests/reference/first_divergence.py compares two such directories.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/forward_steps.h"
#include "util/error.h"

namespace kipp::cli {

class StepDump final : public StepRecorder {
 public:
  void record(ForwardStep step, uint32_t layer, uint32_t position, std::span<const float> values) override;

  // Writes the files into `dir` (created if missing). `producer` names what computed them (the
  // backend's description), `ids` the tokens evaluated.
  Status write(const std::string& dir, const std::string& producer, std::span<const uint32_t> ids) const;

 private:
  struct Rows {
    size_t width = 0;
    std::map<uint32_t, std::vector<float>> by_position;
  };
  Status first_error_ = {};  // a step whose width changed between tokens
  std::map<std::pair<ForwardStep, uint32_t>, Rows> steps_;
};

}  // namespace kipp::cli
