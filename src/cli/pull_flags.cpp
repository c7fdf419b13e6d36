#include "cli/pull_flags.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "util/files.h"
#include "util/progress.h"

namespace kipp::cli {
namespace {

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

void PullFlags::add_to(CLI::App& app) {
  app.add_option("--quant", quant, "Projection weights: bf16, q8_0 or affine4_gs32")
      ->check(CLI::IsMember({"bf16", "q8_0", "affine4_gs32"}));
  app.add_option("--head", head,
                 "Output head (the tied embedding or the untied lm_head): bf16 (default) or q8_0, which halves "
                 "the bytes decode reads for it (docs/MODELS.md gives its measured error)")
      ->check(CLI::IsMember({"bf16", "q8_0"}));
  app.add_option("--models-dir", models_dir,
                 "Where downloads (DIR/.downloads/) and the artifact (DIR/ID.QUANT[.head-q8_0].gguf) go; default "
                 "./models");
  app.add_option("--endpoint", endpoint,
                 std::string("Hub base URL; default $HF_ENDPOINT, else ") + pull::kDefaultEndpoint);
  app.add_option("--token", token,
                 "Hugging Face access token, sent to the hub only; default $HF_TOKEN, else the saved login token");
  auto* cache = app.add_option("--hf-cache", hf_cache,
                               "Hugging Face cache to use a complete snapshot from; default $HF_HUB_CACHE, else "
                               "$HF_HOME/hub, else ~/.cache/huggingface/hub");
  app.add_flag("--no-hf-cache", no_hf_cache, "Do not look in the Hugging Face cache")->excludes(cache);
}

Result<pull::PullOptions> PullFlags::options(const CLI::App& app, const std::string& checkpoint_id) const {
  pull::PullOptions options;
  options.checkpoint_id = checkpoint_id;
  options.scheme = *parse_quant_scheme(quant);
  options.head = *parse_head_scheme(head);
  options.models_dir = models_dir;
  if (app.count("--endpoint") > 0) {
    options.endpoint = endpoint;
    if (options.endpoint.empty()) return fail("--endpoint: expected a URL, got an empty string");
  } else {
    options.endpoint = environment("HF_ENDPOINT");
  }
  options.token = app.count("--token") > 0 ? token : default_token();
  if (!no_hf_cache) options.hf_cache_dir = app.count("--hf-cache") > 0 ? hf_cache : default_hf_cache();
  options.offline = truthy(environment("HF_HUB_OFFLINE"));
  return options;
}

Result<std::string> pull_with_progress(const pull::PullOptions& base) {
  ProgressDisplay progress(ProgressDisplay::mode_for(stderr), stderr);
  pull::PullOptions options = base;
  options.progress = &progress;
  options.note = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto pulled = pull::pull_checkpoint(options);
  progress.finish();
  if (!pulled) return pulled.error();
  std::fprintf(stderr, "converted %s (%s): %llu tensors, %.1f MiB in %.2f s\n", options.checkpoint_id.c_str(),
               std::string(quant_scheme_name(options.scheme)).c_str(), (unsigned long long)pulled->conversion.tensors,
               double(pulled->conversion.bytes_written) / (1 << 20), pulled->conversion.seconds);
  return pulled->artifact_path;
}

}  // namespace kipp::cli
