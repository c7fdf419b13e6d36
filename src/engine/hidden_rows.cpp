#include "engine/hidden_rows.h"

#include <memory>

namespace kipp {
namespace {

Status check_inputs(const Checkpoint& checkpoint, std::span<const std::vector<uint32_t>> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) return fail("input ", i, " has no tokens");
    if (inputs[i].size() > checkpoint.context)
      return fail("input ", i, " has ", inputs[i].size(), " tokens; ", checkpoint.id, "'s context is ",
                  checkpoint.context);
  }
  return {};
}

// Inputs [first, end) evaluated in one call, their rows into `rows`.
Status evaluate_group(BackendModel& model, std::span<const std::vector<uint32_t>> inputs, size_t first, size_t end,
                      std::vector<std::vector<float>>& rows) {
  std::vector<std::unique_ptr<BackendSession>> sessions;
  std::vector<EvalItem> items;
  for (size_t i = first; i < end; ++i) {
    KIPP_ASSIGN(std::unique_ptr<BackendSession> session, model.create_session(uint32_t(inputs[i].size())));
    EvalItem item;
    item.session = session.get();
    item.tokens = inputs[i];
    item.logit_rows = 0;
    item.hidden = rows[i].data();
    items.push_back(item);
    sessions.push_back(std::move(session));
  }
  return model.eval(items);
}

}  // namespace

Result<std::vector<std::vector<float>>> final_hidden_rows(BackendModel& model, const Checkpoint& checkpoint,
                                                          std::span<const std::vector<uint32_t>> inputs) {
  KIPP_TRY(check_inputs(checkpoint, inputs));
  std::vector<std::vector<float>> rows(inputs.size(), std::vector<float>(checkpoint.hidden));
  size_t first = 0;
  while (first < inputs.size()) {
    size_t end = first + 1;
    size_t tokens = inputs[first].size();
    while (end < inputs.size() && tokens + inputs[end].size() <= kHiddenRowBatchTokens) tokens += inputs[end++].size();
    KIPP_TRY(evaluate_group(model, inputs, first, end, rows));
    first = end;
  }
  return rows;
}

}  // namespace kipp
