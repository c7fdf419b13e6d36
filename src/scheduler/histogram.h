// A cumulative histogram with fixed upper bounds, the shape Prometheus exports (le buckets, sum,
// count). Values above the last bound land only in the implicit +Inf bucket.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace kipp {

struct Histogram {
  std::vector<double> bounds;    // ascending upper bounds
  std::vector<uint64_t> counts;  // per bound: observations <= it (cumulative)
  double sum = 0;
  uint64_t count = 0;

  explicit Histogram(std::vector<double> upper_bounds = {})
      : bounds(std::move(upper_bounds)), counts(bounds.size(), 0) {}

  void observe(double value) {
    for (size_t b = 0; b < bounds.size(); ++b)
      if (value <= bounds[b]) ++counts[b];
    sum += value;
    ++count;
  }
};

}  // namespace kipp
