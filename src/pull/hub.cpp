#include "pull/hub.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "convert/sentence_transformers.h"
#include "util/ascii.h"
#include "util/json_fields.h"

namespace kipp::pull {
namespace {

constexpr uint64_t kListingPageBytes = 16ull << 20;
constexpr int kMaxListingPages = 100;

Status parse_listing_entry(const json::Json& entry, const std::string& what, std::map<std::string, HubFile>& files,
                           std::string_view folder) {
  KIPP_ASSIGN(std::string type, json::get_string(entry, "type", what));
  KIPP_ASSIGN(std::string path, json::get_string(entry, "path", what));
  const std::string prefix = folder.empty() ? std::string() : std::string(folder) + "/";
  // Folders, and files anywhere but directly in `folder`, are not what this listing is read for.
  if (type != "file" || path.compare(0, prefix.size(), prefix) != 0 ||
      path.find('/', prefix.size()) != std::string::npos)
    return {};
  const std::string entry_what = what + " (" + path + ")";
  HubFile file;
  file.name = path;
  KIPP_ASSIGN(uint64_t size, json::get_uint(entry, "size", entry_what));
  file.size = size;
  auto lfs = entry.find("lfs");
  if (lfs != entry.end() && !lfs->is_null()) {
    KIPP_ASSIGN(std::string oid, json::get_string(*lfs, "oid", entry_what + " lfs"));
    oid = ascii_lower(oid);
    if (oid.rfind("sha256:", 0) == 0) oid = oid.substr(7);
    if (!is_lower_hex(oid, 64)) return fail(entry_what, ": lfs.oid \"", oid, "\" is not a SHA-256 in hex");
    if (lfs->contains("size")) {
      KIPP_ASSIGN(uint64_t lfs_size, json::get_uint(*lfs, "size", entry_what + " lfs"));
      file.size = lfs_size;
    }
    file.sha256 = oid;
    file.sha256_source = "tree listing";
  } else {
    KIPP_ASSIGN(std::string oid, json::get_string(entry, "oid", entry_what));
    oid = ascii_lower(oid);
    if (!is_lower_hex(oid, 40)) return fail(entry_what, ": oid \"", oid, "\" is not a git blob id (40 hex digits)");
    file.git_sha1 = oid;
  }
  files[path] = std::move(file);
  return {};
}

}  // namespace

std::string HubRepo::resolve_url(const std::string& file) const {
  return endpoint + "/" + repository + "/resolve/" + revision + "/" + file;
}

std::string HubRepo::tree_url(std::string_view folder) const {
  return endpoint + "/api/models/" + repository + "/tree/" + revision +
         (folder.empty() ? "" : "/" + std::string(folder));
}

std::vector<WantedFile> wanted_files(const Checkpoint& checkpoint) {
  std::vector<WantedFile> wanted(std::begin(kMetadataFiles), std::end(kMetadataFiles));
  if (checkpoint.role == Role::embed)
    for (std::string_view file : sentence_transformers_files()) wanted.push_back({file, true});
  return wanted;
}

bool is_checkpoint_path(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return is_plain_file_name(name);
  return is_plain_file_name(name.substr(0, slash)) && is_plain_file_name(name.substr(slash + 1));
}

bool is_plain_file_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  return std::none_of(name.begin(), name.end(), [](char c) { return c == '/' || c == '\\' || c == '\0'; });
}

bool is_lower_hex(std::string_view text, size_t length) {
  return text.size() == length &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Status parse_tree_listing(const std::string& json_text, const std::string& what, std::map<std::string, HubFile>& files,
                          std::string_view folder) {
  KIPP_ASSIGN(json::Json listing, json::parse(json_text, what));
  if (!listing.is_array()) return fail(what, ": expected a JSON array of files");
  for (size_t i = 0; i < listing.size(); ++i)
    KIPP_TRY(parse_listing_entry(listing[i], what + " entry " + std::to_string(i), files, folder));
  return {};
}

std::optional<std::string> next_page_link(const std::string& link_header) {
  // Link: <https://host/api/...?cursor=abc>; rel="next", <...>; rel="prev"
  size_t pos = 0;
  while ((pos = link_header.find('<', pos)) != std::string::npos) {
    const size_t close = link_header.find('>', pos);
    if (close == std::string::npos) return std::nullopt;
    const std::string url = link_header.substr(pos + 1, close - pos - 1);
    const size_t next_link = link_header.find('<', close);
    const std::string params =
        link_header.substr(close + 1, next_link == std::string::npos ? std::string::npos : next_link - close - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos) return url;
    pos = close;
  }
  return std::nullopt;
}

Result<std::vector<std::string>> index_shard_names(const std::string& index_text) {
  const std::string what = kWeightsIndex;
  KIPP_ASSIGN(json::Json index, json::parse(index_text, what));
  KIPP_ASSIGN(const json::Json* weight_map, json::field(index, "weight_map", what));
  if (!weight_map->is_object() || weight_map->empty()) return fail(what, ": weight_map must be a non-empty object");
  std::set<std::string> names;
  for (const auto& [tensor, file] : weight_map->items()) {
    if (!file.is_string()) return fail(what, ": weight_map entry ", tensor, " must be a file name string");
    const std::string name = file.get<std::string>();
    if (!is_plain_file_name(name))
      return fail(what, ": weight_map entry ", tensor, " names \"", name, "\", which is not a plain file name");
    names.insert(name);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Result<HubListing> fetch_listing(const HubClient& client, const HubRepo& repo, std::string_view folder) {
  HubListing listing;
  std::string url = repo.tree_url(folder);
  for (int page = 0; !url.empty(); ++page) {
    if (page == kMaxListingPages)
      return fail("hub listing ", repo.tree_url(folder), ": more than ", kMaxListingPages, " pages");
    KIPP_ASSIGN(HttpResponse response, with_retries(
                                           client.retry, [&] { return client.http->get_text(url, kListingPageBytes); },
                                           [&](const std::string& why) {
                                             if (client.note) client.note("hub listing: " + why);
                                           }));
    if (!response.dropped.empty()) return fail("hub listing ", url, ": connection dropped: ", response.dropped);
    if (page == 0 && response.status == 404) return listing;
    if (is_refusal(response.status)) return refused_by_hub(url, response.status, client.http->sends_token_to(url));
    if (!response.success()) return fail("hub listing ", url, ": ", describe_status(response.status));
    KIPP_TRY(parse_tree_listing(response.body, "hub listing " + url, listing.files, folder));
    url = next_page_link(response.header("link")).value_or("");
  }
  listing.available = true;
  return listing;
}

Result<std::optional<HubFile>> probe_file(const HubClient& client, const HubRepo& repo, const std::string& name) {
  const std::string url = repo.resolve_url(name);
  KIPP_ASSIGN(HttpResponse response, with_retries(
                                         client.retry, [&] { return client.http->head(url); },
                                         [&](const std::string& why) {
                                           if (client.note) client.note(name + ": " + why);
                                         }));
  if (!response.dropped.empty()) return fail(url, ": connection dropped: ", response.dropped);
  if (response.status == 404) return std::optional<HubFile>();
  if (is_refusal(response.status)) return refused_by_hub(url, response.status, client.http->sends_token_to(url));
  // A redirect to another host (the CDN of an LFS file) is the hub's own answer: its headers state
  // the file; the CDN is never asked (a signed download URL may refuse HEAD).
  const bool redirected = response.status >= 300 && response.status < 400;
  if (!response.success() && !redirected) return fail(url, ": ", describe_status(response.status));
  HubFile file;
  file.name = name;
  if (response.linked_size) {
    file.size = response.linked_size;
  } else if (const std::string length = response.header("content-length");
             !redirected && !length.empty() && length.size() < 20 &&
             std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    file.size = std::stoull(length);
  }
  KIPP_TRY(merge_linked_etag(file, response.linked_etag));
  return std::optional<HubFile>(std::move(file));
}

Status merge_linked_etag(HubFile& file, const std::string& linked_etag) {
  const std::string etag = ascii_lower(linked_etag);
  if (!is_lower_hex(etag, 64)) return {};  // absent, or not an LFS SHA-256 (some other server's etag)
  if (file.sha256.empty()) {
    file.sha256 = etag;
    file.sha256_source = "X-Linked-Etag";
  } else if (file.sha256 != etag) {
    return fail(file.name, ": the hub reports two different SHA-256s: ", file.sha256, " (", file.sha256_source,
                ") and ", etag, " (X-Linked-Etag)");
  } else if (file.sha256_source.find("X-Linked-Etag") == std::string::npos) {
    file.sha256_source += " and X-Linked-Etag";
  }
  return {};
}

bool is_refusal(long status) { return status == 401 || status == 403; }

Error refused_by_hub(const std::string& url, long status, bool token_sent) {
  if (token_sent)
    return fail(url, ": ", describe_status(status),
                ": the hub refused the token (HF_TOKEN or --token); check that it is "
                "valid and grants access to this repository");
  return fail(url, ": ", describe_status(status),
              ": the repository needs a token: set HF_TOKEN or pass --token "
              "(a Hugging Face access token with read access)");
}

std::string describe_status(long status) {
  const char* reason = "";
  switch (status) {
    case 400: reason = " Bad Request"; break;
    case 401: reason = " Unauthorized"; break;
    case 403: reason = " Forbidden"; break;
    case 404: reason = " Not Found"; break;
    case 408: reason = " Request Timeout"; break;
    case 416: reason = " Range Not Satisfiable"; break;
    case 429: reason = " Too Many Requests"; break;
    case 500: reason = " Internal Server Error"; break;
    case 502: reason = " Bad Gateway"; break;
    case 503: reason = " Service Unavailable"; break;
    case 504: reason = " Gateway Timeout"; break;
    default: break;
  }
  return "HTTP " + std::to_string(status) + reason;
}

}  // namespace kipp::pull
