// Summaries of repeated measurements, as benchmarks report them: the median with the spread.
#pragma once

#include <algorithm>
#include <vector>

namespace kipp {

struct Summary {
  double median = 0, min = 0, max = 0;
};

inline Summary summarize(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return {median, samples.front(), samples.back()};
}

}  // namespace kipp
