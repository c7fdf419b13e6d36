// Small comparisons the backend tests share: normalized error, argmax, a random prompt.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace kipp::testing {

// sum (a - b)^2 / sum b^2, in double.
inline double nmse(std::span<const float> a, std::span<const float> b) {
  double error = 0, energy = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    error += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    energy += double(b[i]) * b[i];
  }
  return error / energy;
}

inline size_t argmax(std::span<const float> row) {
  return size_t(std::max_element(row.begin(), row.end()) - row.begin());
}

// `length` ordinary-token ids (below the special tokens), reproducible from `seed`.
inline std::vector<uint32_t> random_prompt(size_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> ids(length);
  for (uint32_t& id : ids) id = rng() % 151643;
  return ids;
}

}  // namespace kipp::testing
