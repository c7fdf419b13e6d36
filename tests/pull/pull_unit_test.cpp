// Unit tests of the pull layer's pure parts: the hub's listing and index formats, HTTP range
// headers, artifact naming and progress formatting. The network paths are tested end to end by
// pull_e2e.py against a local hub.
#include <gtest/gtest.h>

#include "pull/hf_cache.h"
#include "pull/http_fetch.h"
#include "pull/hub.h"
#include "util/progress.h"
#include "pull/pull.h"

namespace kipp::pull {
namespace {

const std::string kSha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kSha1 = "0123456789abcdef0123456789abcdef01234567";

TEST(ContentRange, ParsesSpansAndTotals) {
  auto range = parse_content_range("bytes 100-199/1000");
  ASSERT_TRUE(range);
  EXPECT_EQ(range->start, 100u);
  EXPECT_EQ(range->end, 199u);
  EXPECT_EQ(range->total, 1000u);
  range = parse_content_range("bytes */1000");
  ASSERT_TRUE(range);
  EXPECT_FALSE(range->start);
  EXPECT_EQ(range->total, 1000u);
  range = parse_content_range("bytes 0-9/*");
  ASSERT_TRUE(range);
  EXPECT_FALSE(range->total);
  EXPECT_FALSE(parse_content_range(""));
  EXPECT_FALSE(parse_content_range("bytes 9-0/10"));
  EXPECT_FALSE(parse_content_range("items 0-9/10"));
  EXPECT_FALSE(parse_content_range("bytes 0-x/10"));
}

TEST(TreeListing, LfsFilesUseTheLfsOidAndOthersTheGitBlobId) {
  const std::string text = R"([
    {"type":"directory","oid":")" +
                           kSha1 + R"(","size":0,"path":"original"},
    {"type":"file","oid":")" +
                           kSha1 + R"(","size":12,"path":"original/params.json"},
    {"type":"file","oid":")" +
                           kSha1 + R"(","size":700,"path":"config.json"},
    {"type":"file","oid":"ffffffffffffffffffffffffffffffffffffffff","size":5000,"path":"model.safetensors",
     "lfs":{"oid":")" + kSha256 +
                           R"(","size":5000,"pointerSize":134}}])";
  std::map<std::string, HubFile> files;
  ASSERT_TRUE(parse_tree_listing(text, "listing", files));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files["config.json"].git_sha1, kSha1);
  EXPECT_TRUE(files["config.json"].sha256.empty());
  EXPECT_EQ(files["config.json"].size, 700u);
  EXPECT_EQ(files["model.safetensors"].sha256, kSha256);
  EXPECT_TRUE(files["model.safetensors"].git_sha1.empty());  // the pointer file's id is not the content's
  EXPECT_EQ(files["model.safetensors"].size, 5000u);
}

TEST(TreeListing, RejectsWhatIsNotAListing) {
  std::map<std::string, HubFile> files;
  auto bad = parse_tree_listing("<html>", "listing", files);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("not valid JSON"), std::string::npos);
  EXPECT_FALSE(parse_tree_listing(R"({"files":[]})", "listing", files));
  EXPECT_FALSE(parse_tree_listing(R"([{"type":"file","path":"a","size":1,"oid":"xyz"}])", "listing", files));
  EXPECT_FALSE(parse_tree_listing(R"([{"type":"file","path":"a","oid":")" + kSha1 + R"("}])", "listing", files));
  EXPECT_FALSE(parse_tree_listing(
      R"([{"type":"file","path":"a","size":1,"oid":")" + kSha1 + R"(","lfs":{"oid":"short"}}])", "listing", files));
}

TEST(TreeListing, FollowsTheNextLink) {
  EXPECT_EQ(next_page_link("<https://h/api/x?cursor=2>; rel=\"next\""), "https://h/api/x?cursor=2");
  EXPECT_EQ(next_page_link("<https://h/p>; rel=\"prev\", <https://h/n>; rel=\"next\""), "https://h/n");
  EXPECT_FALSE(next_page_link("<https://h/p>; rel=\"prev\""));
  EXPECT_FALSE(next_page_link(""));
}

TEST(Index, ShardNamesAreDistinctPlainFileNames) {
  auto shards = index_shard_names(
      R"({"metadata":{},"weight_map":{"a":"s2.safetensors","b":"s1.safetensors","c":"s2.safetensors"}})");
  ASSERT_TRUE(shards);
  EXPECT_EQ(*shards, (std::vector<std::string>{"s1.safetensors", "s2.safetensors"}));
  for (const char* name : {"../evil.safetensors", "sub/x.safetensors", ".hidden", ""}) {
    auto bad = index_shard_names(std::string(R"({"weight_map":{"t":")") + name + R"("}})");
    ASSERT_FALSE(bad) << name;
    EXPECT_NE(bad.error().message.find("plain file name"), std::string::npos) << bad.error().message;
  }
  EXPECT_FALSE(index_shard_names(R"({"weight_map":{}})"));
  EXPECT_FALSE(index_shard_names(R"({"weight_map":{"t":3}})"));
  EXPECT_FALSE(index_shard_names(R"({"other":{}})"));
}

TEST(LinkedEtag, AddsAgreesOrConflicts) {
  HubFile file;
  file.name = "model.safetensors";
  ASSERT_TRUE(merge_linked_etag(file, ""));
  ASSERT_TRUE(merge_linked_etag(file, "\"some-other-etag\""));  // not a SHA-256: ignored
  EXPECT_TRUE(file.sha256.empty());
  ASSERT_TRUE(merge_linked_etag(file, kSha256));
  EXPECT_EQ(file.sha256_source, "X-Linked-Etag");
  file.sha256_source = "tree listing";
  ASSERT_TRUE(merge_linked_etag(file, kSha256));
  EXPECT_EQ(file.sha256_source, "tree listing and X-Linked-Etag");
  std::string other = kSha256;
  other[0] = 'f';
  auto conflict = merge_linked_etag(file, other);
  ASSERT_FALSE(conflict);
  EXPECT_NE(conflict.error().message.find(kSha256), std::string::npos);
  EXPECT_NE(conflict.error().message.find(other), std::string::npos);
}

TEST(Naming, ArtifactAndDownloadPaths) {
  EXPECT_EQ(flat_id("kipp-test/qwen3-tiny"), "kipp-test_qwen3-tiny");
  EXPECT_EQ(artifact_path("models", "qwen3-0.6b", QuantScheme::q8_0), "models/qwen3-0.6b.q8_0.gguf");
  EXPECT_EQ(artifact_path("models", "qwen3-0.6b", QuantScheme::affine4_gs32, HeadScheme::q8_0),
            "models/qwen3-0.6b.affine4_gs32.head-q8_0.gguf");
  const Checkpoint* tiny = find_checkpoint("kipp-test/qwen3-tiny");
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(download_dir("m", *tiny), "m/.downloads/kipp-test_qwen3-tiny/" + std::string(tiny->revision));
  HubRepo repo{"https://huggingface.co", "Qwen/Qwen3-0.6B", "abc"};
  EXPECT_EQ(repo.resolve_url("config.json"), "https://huggingface.co/Qwen/Qwen3-0.6B/resolve/abc/config.json");
  EXPECT_EQ(repo.tree_url(), "https://huggingface.co/api/models/Qwen/Qwen3-0.6B/tree/abc");
  EXPECT_TRUE(is_plain_file_name("model-00001-of-00002.safetensors"));
  EXPECT_FALSE(is_plain_file_name(".."));
}

TEST(Urls, OriginsDecideWhoSeesTheToken) {
  EXPECT_EQ(url_origin("https://huggingface.co/Qwen/Qwen3-0.6B/resolve/x/config.json"), "https://huggingface.co:443");
  EXPECT_EQ(url_origin("HTTP://Example.org/a"), "http://example.org:80");
  EXPECT_EQ(url_origin("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080");
  // The CDN an LFS file redirects to is another origin: another host, or another port.
  EXPECT_NE(url_origin("https://cdn-lfs.hf.co/repos/ab"), url_origin("https://huggingface.co/"));
  EXPECT_NE(url_origin("http://127.0.0.1:8081/"), url_origin("http://127.0.0.1:8080/"));
  EXPECT_EQ(url_origin("not a url"), "");

  HttpClient client;
  client.set_token(url_origin("https://huggingface.co"), "hf_x");
  EXPECT_TRUE(client.sends_token_to("https://huggingface.co/api/models/Qwen/Qwen3-0.6B/tree/abc"));
  EXPECT_FALSE(client.sends_token_to("https://cas-bridge.xethub.hf.co/xet-bridge-us/abc?X-Amz-Signature=1"));
  EXPECT_FALSE(client.sends_token_to("http://huggingface.co/"));  // another scheme is another origin
}

TEST(Urls, RelativeLocationsResolveAgainstTheRequest) {
  const std::string base = "https://huggingface.co/Qwen/Qwen3-0.6B/resolve/abc/config.json";
  EXPECT_EQ(resolve_url(base, "/api/resolve-cache/models/Qwen/Qwen3-0.6B/abc/config.json").value(),
            "https://huggingface.co/api/resolve-cache/models/Qwen/Qwen3-0.6B/abc/config.json");
  EXPECT_EQ(resolve_url(base, "https://cdn.example/x?sig=1").value(), "https://cdn.example/x?sig=1");
  EXPECT_EQ(resolve_url(base, "other.json").value(), "https://huggingface.co/Qwen/Qwen3-0.6B/resolve/abc/other.json");
  EXPECT_FALSE(resolve_url(base, "ftp://example.org/x").ok());
}

TEST(RetryAfter, SecondsOrADateAndACap) {
  HttpResponse response;
  response.status = 429;
  EXPECT_FALSE(retry_after_seconds(response));
  response.headers["retry-after"] = "7";
  EXPECT_EQ(retry_after_seconds(response), 7.0);
  std::string why = "the server answered HTTP 429";
  EXPECT_EQ(retry_delay(0.5, response, why), 7.0);
  EXPECT_NE(why.find("waiting 7 s as it asks (Retry-After)"), std::string::npos) << why;
  why.clear();
  EXPECT_EQ(retry_delay(8.0, response, why), 8.0) << "a longer backoff wins";
  EXPECT_EQ(why, "");
  response.headers["retry-after"] = "86400";
  EXPECT_EQ(retry_delay(0.5, response, why), kMaxRetryAfterSeconds);
  EXPECT_NE(why.find("asks to wait 86400 s"), std::string::npos) << why;
  response.headers["retry-after"] = "Wed, 21 Oct 2015 07:28:00 GMT";  // in the past: no wait
  EXPECT_EQ(retry_after_seconds(response), 0.0);
  response.headers["retry-after"] = "soon";
  EXPECT_FALSE(retry_after_seconds(response));
}

TEST(HfCache, SnapshotsLiveUnderTheRepositoryFolder) {
  const Checkpoint* c = find_checkpoint("qwen3-0.6b");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(hf_snapshot_dir("/home/u/.cache/huggingface/hub", *c),
            "/home/u/.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/" + std::string(c->revision));
}

TEST(Progress, Formatting) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(200ull << 20), "200 MiB");
  EXPECT_EQ(format_eta(42), "42s");
  EXPECT_EQ(format_eta(187), "3m07s");
  EXPECT_EQ(format_eta(7500), "2h05m");
  const std::string line = format_bar_line("model.safetensors", 50 << 20, 100 << 20, 10 << 20, 100);
  EXPECT_NE(line.find("[###############...............]"), std::string::npos) << line;
  EXPECT_NE(line.find("50%"), std::string::npos) << line;
  EXPECT_NE(line.find("10.0 MiB/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 5s"), std::string::npos) << line;
  EXPECT_LT(format_bar_line(std::string(200, 'x'), 1, 2, 1, 40).size(), 40u);
  EXPECT_EQ(format_plain_line("config.json", 1024, 0, 0), "config.json: 1.00 KiB");
}

}  // namespace
}  // namespace kipp::pull
