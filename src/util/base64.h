// Standard base64 (RFC 4648 §4, with padding): what OpenAI's embeddings API sends a vector as when
// asked for encoding_format "base64" (its raw little-endian FP32 bytes).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kipp {

std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace kipp
