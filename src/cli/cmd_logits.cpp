// `kipp logits --model FILE --ids 1,2,3 [--all-positions] --out FILE.f32 [--backend cpu-ref]
// [--dump-steps DIR]`: raw little-endian FP32 logits, row-major [rows][vocab], for comparing
// backends and oracles; with --dump-steps also every named intermediate of every position
// (cli/step_dump.h), for finding where two of them part.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "cli/id_list.h"
#include "cli/step_dump.h"
#include "model/model_file.h"
#include "util/files.h"

namespace kipp::cli {
namespace {

struct LogitsArgs {
  std::string model, ids, out;
  std::string dump_steps = {};  // a directory, or empty
  bool all_positions = false;
  BackendFlags backend{"cpu-ref"};  // the scalar oracle by default
};

Status write_logits(const LogitsArgs& args) {
  KIPP_ASSIGN(std::vector<uint32_t> ids, parse_id_list(args.ids));
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  if (ids.size() > model->checkpoint().context)
    return fail("--ids: ", ids.size(), " tokens exceed the context of ", model->checkpoint().context);
  KIPP_ASSIGN(std::unique_ptr<BackendSession> session, backend->create_session(uint32_t(ids.size())));
  const uint32_t rows = args.all_positions ? uint32_t(ids.size()) : 1;
  std::vector<float> logits(size_t(rows) * model->checkpoint().vocab());
  StepDump steps;
  if (!args.dump_steps.empty()) KIPP_TRY(backend->record_steps(&steps));
  EvalItem item{session.get(), ids, 0, rows, logits.data(), {}};
  KIPP_TRY(backend->eval(std::span(&item, 1)));
  if (!args.dump_steps.empty()) KIPP_TRY(steps.write(args.dump_steps, backend->describe(), ids));
  KIPP_ASSIGN(AtomicFile out, AtomicFile::create(args.out));
  KIPP_TRY(out.write(logits.data(), logits.size() * sizeof(float)));
  return out.commit();
}

}  // namespace

Command add_logits_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "logits",
      "Write the raw FP32 logits of a token sequence ([rows][vocab], little-endian; vocab 151936 for the generative "
      "checkpoints)");
  auto args = std::make_shared<LogitsArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact")->required();
  sub->add_option("--ids", args->ids, "Comma-separated token ids")->required();
  sub->add_flag("--all-positions", args->all_positions, "A row for every position (default: the last only)");
  sub->add_option("--out", args->out, "Output file")->required();
  sub->add_option("--dump-steps", args->dump_steps,
                  "Also write every named intermediate (embedding, each layer's norms, Q/K after RoPE, attention, "
                  "FFN, residual, final norm, logits) of every position into this directory, for "
                  "tests/reference/first_divergence.py");
  args->backend.add_to(*sub);
  return {sub, [args] {
            if (auto written = write_logits(*args); !written) return report(written.error());
            return 0;
          }};
}

}  // namespace kipp::cli
