// Which kernel set the fast CPU backend runs, chosen once at model load from what the processor
// supports, or forced with --cpu-isa portable|avx2|avx512|amx (to exercise every path on one
// machine). A binary built anywhere runs everywhere: only the chosen set's instructions execute.
#pragma once

#include <string_view>

#include "util/error.h"

namespace kipp::cpu {

enum class Isa { portable, avx2, avx512, amx };

std::string_view isa_name(Isa isa);
// The best set this processor supports (amx is avx512 plus Intel's tile registers with 8-bit
// products, AMX-TILE and AMX-INT8, as on Sapphire Rapids, where Linux grants the process their
// state; avx512 needs F, BW, VL, DQ and VNNI, as on Ice Lake, Sapphire Rapids and Zen 4; avx2
// needs AVX2, FMA and F16C).
Isa detected_isa();
// detected_isa(), unless `forced` names another (BackendOptions::cpu_isa); asking for a set the
// processor lacks is an error.
Result<Isa> chosen_isa(std::string_view forced);

// Physical cores (not hardware threads), from Linux's CPU topology; at least 1.
unsigned physical_cores();

}  // namespace kipp::cpu
