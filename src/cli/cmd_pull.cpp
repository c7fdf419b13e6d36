// `kipp pull ID [--quant Q] [--models-dir DIR] [--endpoint URL] [--token T] [--hf-cache DIR | --no-hf-cache]`:
// download, verify and convert a registry checkpoint (pull/pull.h). Messages and progress go to
// stderr; the artifact's path is the only thing printed on stdout, so scripts can capture it.
// The Hugging Face environment variables users already set (HF_ENDPOINT, HF_TOKEN, HF_HOME,
// HF_HUB_CACHE, HF_HUB_OFFLINE) are read here, in the front end, and become options.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/report.h"
#include "pull/pull.h"
#include "util/files.h"
#include "util/progress.h"

namespace kipp::cli {

namespace {
struct PullArgs {
  std::string checkpoint, quant = "bf16", head = "bf16", models_dir = pull::kDefaultModelsDir, endpoint, token,
                          hf_cache;
  bool no_hf_cache = false;
};

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// huggingface_hub's home: HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface.
std::string hf_home() {
  if (std::string home = environment("HF_HOME"); !home.empty()) return home;
  if (std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/huggingface";
  if (std::string user = environment("HOME"); !user.empty()) return user + "/.cache/huggingface";
  return "";
}

// HF_HUB_CACHE, else {HF home}/hub.
std::string default_hf_cache() {
  if (std::string cache = environment("HF_HUB_CACHE"); !cache.empty()) return cache;
  const std::string home = hf_home();
  return home.empty() ? "" : home + "/hub";
}

// HF_TOKEN, else the file `huggingface-cli login` writes (HF_TOKEN_PATH, else {HF home}/token).
std::string default_token() {
  if (std::string token = environment("HF_TOKEN"); !token.empty()) return token;
  std::string path = environment("HF_TOKEN_PATH");
  if (path.empty() && !hf_home().empty()) path = hf_home() + "/token";
  if (path.empty()) return "";
  auto text = read_text_file(path, 4096);
  if (!text) return "";
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

// huggingface_hub's reading of a boolean variable: 1, ON, YES or TRUE in any case.
bool truthy(std::string value) {
  for (char& c : value) c = char(std::toupper(static_cast<unsigned char>(c)));
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}
}  // namespace

Command add_pull_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("pull", "Download a registry checkpoint at its pinned revision, verify it and convert it");
  auto args = std::make_shared<PullArgs>();
  sub->add_option("id", args->checkpoint, "Registry id, e.g. qwen3-0.6b (see `kipp registry`)")->required();
  sub->add_option("--quant", args->quant, "Projection weights: bf16, q8_0 or affine4_gs32")
      ->check(CLI::IsMember({"bf16", "q8_0", "affine4_gs32"}));
  sub->add_option("--head", args->head,
                  "Output head (the tied embedding or the untied lm_head): bf16 (default) or q8_0, which halves "
                  "the bytes decode reads for it (docs/MODELS.md gives its measured error)")
      ->check(CLI::IsMember({"bf16", "q8_0"}));
  sub->add_option("--models-dir", args->models_dir,
                  "Where downloads (DIR/.downloads/) and the artifact (DIR/ID.QUANT[.head-q8_0].gguf) go; default "
                  "./models");
  sub->add_option("--endpoint", args->endpoint,
                  std::string("Hub base URL; default $HF_ENDPOINT, else ") + pull::kDefaultEndpoint);
  sub->add_option("--token", args->token,
                  "Hugging Face access token, sent to the hub only; default $HF_TOKEN, else the saved login token");
  auto* cache = sub->add_option("--hf-cache", args->hf_cache,
                                "Hugging Face cache to use a complete snapshot from; default $HF_HUB_CACHE, else "
                                "$HF_HOME/hub, else ~/.cache/huggingface/hub");
  sub->add_flag("--no-hf-cache", args->no_hf_cache, "Do not look in the Hugging Face cache")->excludes(cache);
  return {sub, [args, sub] {
            ProgressDisplay progress(ProgressDisplay::mode_for(stderr), stderr);
            pull::PullOptions options;
            options.checkpoint_id = args->checkpoint;
            options.scheme = *parse_quant_scheme(args->quant);
            options.head = *parse_head_scheme(args->head);
            options.models_dir = args->models_dir;
            if (sub->count("--endpoint") > 0) {
              options.endpoint = args->endpoint;
              if (options.endpoint.empty()) return report(fail("--endpoint: expected a URL, got an empty string"));
            } else {
              options.endpoint = environment("HF_ENDPOINT");
            }
            options.token = sub->count("--token") > 0 ? args->token : default_token();
            if (!args->no_hf_cache)
              options.hf_cache_dir = sub->count("--hf-cache") > 0 ? args->hf_cache : default_hf_cache();
            options.offline = truthy(environment("HF_HUB_OFFLINE"));
            options.progress = &progress;
            options.note = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
            auto pulled = pull::pull_checkpoint(options);
            progress.finish();
            if (!pulled) return report(pulled.error());
            std::fprintf(stderr, "converted %s (%s): %llu tensors, %.1f MiB in %.2f s\n", args->checkpoint.c_str(),
                         args->quant.c_str(), (unsigned long long)pulled->conversion.tensors,
                         double(pulled->conversion.bytes_written) / (1 << 20), pulled->conversion.seconds);
            std::printf("%s\n", pulled->artifact_path.c_str());
            return 0;
          }};
}

}  // namespace kipp::cli
