// Which kernel set the fast CPU backend runs, chosen once at model load from what the processor
// supports, or forced with --cpu-isa portable|avx2|avx512 (to exercise every path on one
// machine). A binary built anywhere runs everywhere: only the chosen set's instructions execute.
#pragma once

#include <string_view>

#include "util/error.h"

namespace kipp::cpu {

enum class Isa { portable, avx2, avx512 };

std::string_view isa_name(Isa isa);
// The best set this processor supports (avx512 needs F, BW, VL, DQ and VNNI, as on Ice Lake,
// Sapphire Rapids and Zen 4; avx2 needs AVX2, FMA and F16C).
Isa detected_isa();
// detected_isa(), unless `forced` names another (BackendOptions::cpu_isa); asking for a set the
// processor lacks is an error.
Result<Isa> chosen_isa(std::string_view forced);

// Physical cores (not hardware threads), from Linux's CPU topology; at least 1.
unsigned physical_cores();

}  // namespace kipp::cpu
