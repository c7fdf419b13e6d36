// Which kernel set the fast CPU backend runs, chosen once at model load from what the processor
// supports, or forced with --cpu-isa portable|avx2|avx512|avx512bf16|amx (to exercise every path
// on one machine; --bf16-activations takes avx512bf16). A binary built anywhere runs everywhere:
// only the chosen set's instructions execute.
#pragma once

#include <string_view>

#include "util/error.h"

namespace kipp::cpu {

enum class Isa { portable, avx2, avx512, avx512bf16, amx };

std::string_view isa_name(Isa isa);
// Whether this processor runs a set: avx2 needs AVX2, FMA and F16C; avx512 F, BW, VL, DQ and
// VNNI (Ice Lake, Sapphire Rapids, Zen 4 and later); avx512bf16 avx512 plus AVX512-BF16 (Cooper
// Lake, Sapphire Rapids, Zen 4 and later); amx avx512 plus Intel's tile registers with 8-bit
// products, AMX-TILE and AMX-INT8 (Sapphire Rapids and later), where Linux grants the process
// their state.
bool runs(Isa isa);
// The set the backend takes by default: amx where it runs, else avx512, avx2, portable. Never
// avx512bf16: without --bf16-activations it computes what avx512 does (the same bits), and with
// it the results move further from cpu-ref, so that is the user's choice (src/backend/cpu/KERNELS.md).
Isa detected_isa();
// detected_isa(), unless `forced` names another (BackendOptions::cpu_isa); asking for a set the
// processor cannot run is an error.
Result<Isa> chosen_isa(std::string_view forced);

// Physical cores (not hardware threads), from Linux's CPU topology; at least 1.
unsigned physical_cores();

}  // namespace kipp::cpu
