// The Qwen2 split regex, matched by hand in one left-to-right pass:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Every character is inspected a bounded number of times, so the split is linear in the text.
#pragma once

#include <string_view>
#include <vector>

namespace kipp {

// Appends the pieces of `text` (valid UTF-8, already normalized) in order; together they cover it.
void pretokenize(std::string_view text, std::vector<std::string_view>& pieces);

}  // namespace kipp
