// The one type for token ids across the tokenizer and its callers.
#pragma once

#include <cstdint>

namespace kipp {

using TokenId = uint32_t;

}  // namespace kipp
