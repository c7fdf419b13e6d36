#include "cli/step_dump.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "util/files.h"

namespace kipp::cli {

void StepDump::record(ForwardStep step, uint32_t layer, uint32_t position, std::span<const float> values) {
  Rows& rows = steps_[{step, layer}];
  if (rows.width == 0) rows.width = values.size();
  if (rows.width != values.size() && first_error_)
    first_error_ = fail("step ", forward_step_name(step), " of layer ", layer, " recorded ", values.size(),
                        " values at position ", position, " after ", rows.width);
  rows.by_position[position].assign(values.begin(), values.end());
}

Status StepDump::write(const std::string& dir, const std::string& producer, std::span<const uint32_t> ids) const {
  KIPP_TRY(first_error_);
  if (steps_.empty()) return fail("no forward steps were recorded");
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return fail("--dump-steps: cannot create ", dir, ": ", error.message());
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& [key, rows] : steps_) {
    const auto [step, layer] = key;
    char name[64];
    if (is_layer_step(step))
      std::snprintf(name, sizeof name, "layer%03u.%s.f32", layer, std::string(forward_step_name(step)).c_str());
    else std::snprintf(name, sizeof name, "%s.f32", std::string(forward_step_name(step)).c_str());
    KIPP_ASSIGN(AtomicFile file, AtomicFile::create(dir + "/" + name));
    nlohmann::json positions = nlohmann::json::array();
    for (const auto& [position, values] : rows.by_position) {
      KIPP_TRY(file.write(values.data(), values.size() * sizeof(float)));
      positions.push_back(position);
    }
    KIPP_TRY(file.commit());
    nlohmann::json entry = {
        {"step", forward_step_name(step)}, {"file", name}, {"width", rows.width}, {"positions", positions}};
    if (is_layer_step(step)) entry["layer"] = layer;
    listed.push_back(entry);
  }
  const nlohmann::json manifest = {{"format", "kipp-forward-steps"},
                                   {"version", 1},
                                   {"producer", producer},
                                   {"step_order", kForwardStepNames},
                                   {"ids", std::vector<uint32_t>(ids.begin(), ids.end())},
                                   {"steps", listed}};
  const std::string text = manifest.dump(1) + "\n";
  KIPP_ASSIGN(AtomicFile file, AtomicFile::create(dir + "/steps.json"));
  KIPP_TRY(file.write(text.data(), text.size()));
  return file.commit();
}

}  // namespace kipp::cli
