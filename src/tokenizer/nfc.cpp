// NFC in three steps over each stretch that can change: canonical decomposition per character
// (utf8proc), canonical ordering by a stable sort of each run of non-starters (O(n log n), so a
// megabyte of combining marks stays fast), then utf8proc's linear composition pass.
#include "tokenizer/nfc.h"

#include <algorithm>

#include <utf8proc.h>

#include "tokenizer/char_table.h"
#include "util/utf8.h"

namespace kipp {
namespace {

uint8_t combining_class(int32_t code_point) { return uint8_t(utf8proc_get_property(code_point)->combining_class); }

}  // namespace

std::string_view NfcNormalizer::normalize(std::string_view text) {
  const CharTable& table = CharTable::get();
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t copied = 0;         // text[0, copied) is already in normalized_
  size_t last_boundary = 0;  // start of the last character before which NFC cannot reach
  size_t pos = 0;
  bool changed = false;
  while (pos < text.size()) {
    if (bytes[pos] < 0x80) {
      last_boundary = pos++;
      continue;
    }
    uint32_t length = 0;
    const char32_t code_point = utf8::decode_valid(bytes + pos, length);
    if (table.nfc_boundary(code_point)) {
      last_boundary = pos;
      pos += length;
      continue;
    }
    size_t end = pos + length;
    while (end < text.size()) {
      uint32_t next_length = 0;
      const char32_t next = utf8::decode_valid(bytes + end, next_length);
      if (table.nfc_boundary(next)) break;
      end += next_length;
    }
    if (!changed) {
      normalized_.clear();
      changed = true;
    }
    normalized_.append(text.substr(copied, last_boundary - copied));
    append_region(text.substr(last_boundary, end - last_boundary));
    copied = end;
    last_boundary = end;
    pos = end;
  }
  if (!changed) return text;
  normalized_.append(text.substr(copied));
  return normalized_;
}

// A region may hold characters the reference does not normalize: they split it, unchanged.
void NfcNormalizer::append_region(std::string_view region) {
  const CharTable& table = CharTable::get();
  const auto* bytes = reinterpret_cast<const unsigned char*>(region.data());
  size_t piece_start = 0;
  size_t pos = 0;
  while (pos < region.size()) {
    uint32_t length = 0;
    const char32_t code_point = utf8::decode_valid(bytes + pos, length);
    if (table.normalization_frozen(code_point)) {
      append_utf8proc_nfc(region.substr(piece_start, pos - piece_start));
      normalized_.append(region.substr(pos, length));
      piece_start = pos + length;
    }
    pos += length;
  }
  append_utf8proc_nfc(region.substr(piece_start));
}

void NfcNormalizer::append_utf8proc_nfc(std::string_view piece) {
  if (piece.empty()) return;
  const auto* bytes = reinterpret_cast<const unsigned char*>(piece.data());
  code_points_.clear();
  int32_t decomposed[32];
  for (size_t pos = 0; pos < piece.size();) {
    uint32_t length = 0;
    const char32_t code_point = utf8::decode_valid(bytes + pos, length);
    pos += length;
    const utf8proc_ssize_t count =
        utf8proc_decompose_char(int32_t(code_point), decomposed, 32,
                                utf8proc_option_t(UTF8PROC_DECOMPOSE | UTF8PROC_STABLE), nullptr);
    code_points_.insert(code_points_.end(), decomposed, decomposed + std::clamp<utf8proc_ssize_t>(count, 0, 32));
  }
  // Canonical ordering: each run of non-starters sorted stably by combining class.
  for (size_t run = 0; run < code_points_.size();) {
    if (combining_class(code_points_[run]) == 0) {
      ++run;
      continue;
    }
    size_t run_end = run + 1;
    while (run_end < code_points_.size() && combining_class(code_points_[run_end]) != 0) ++run_end;
    std::stable_sort(code_points_.begin() + ptrdiff_t(run), code_points_.begin() + ptrdiff_t(run_end),
                     [](int32_t a, int32_t b) { return combining_class(a) < combining_class(b); });
    run = run_end;
  }
  const utf8proc_ssize_t composed = utf8proc_normalize_utf32(code_points_.data(), utf8proc_ssize_t(code_points_.size()),
                                                             utf8proc_option_t(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  for (utf8proc_ssize_t i = 0; i < composed; ++i) utf8::append(char32_t(code_points_[size_t(i)]), normalized_);
}

}  // namespace kipp
