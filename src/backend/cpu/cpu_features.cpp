#include "backend/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace kipp::cpu {
#if defined(__x86_64__)
namespace {

// The register state the operating system saves on a context switch (XCR0), or 0 without XSAVE.
unsigned saved_state() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE)) return 0;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  return lo;
}

bool os_saves_ymm_state() { return (saved_state() & 0x6) == 0x6; }           // XMM, YMM
bool os_saves_zmm_state() { return (saved_state() & 0xe6) == 0xe6; }         // + opmask, ZMM
bool os_saves_tile_state() { return (saved_state() & 0x60000) == 0x60000; }  // XTILECFG, XTILEDATA

// Linux hands the 8 KiB of tile data to a process only once it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); until then a tile instruction is a fault. Asked once.
bool tile_state_granted() {
  static const bool granted = [] {
    constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
    constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return granted;
}

}  // namespace
#endif

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::amx: return "amx";
  }
  return "?";
}

// Only x86-64 has sets beyond the portable one (src/CMakeLists.txt builds them there only).
bool runs(Isa isa) {
  if (isa == Isa::portable) return true;
#if defined(__x86_64__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool fma = ecx & bit_FMA, f16c = ecx & bit_F16C;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool avx2 = (ebx & bit_AVX2) && fma && f16c && os_saves_ymm_state();
  const bool avx512 = (ebx & bit_AVX512F) && (ebx & bit_AVX512BW) && (ebx & bit_AVX512VL) && (ebx & bit_AVX512DQ) &&
                      (ecx & bit_AVX512VNNI) && fma && f16c && os_saves_zmm_state();
  // CPUID leaf 7 EDX bits 24 (AMX-TILE) and 25 (AMX-INT8); clang 14's cpuid.h does not name them.
  const bool amx_bits = (edx & (1u << 24)) && (edx & (1u << 25));
  // CPUID leaf 7 subleaf 1 EAX bit 5: AVX512-BF16 (vdpbf16ps).
  const bool bf16 = __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5));
  switch (isa) {
    case Isa::avx2: return avx2;
    case Isa::avx512: return avx512;
    case Isa::avx512bf16: return avx512 && bf16;
    case Isa::amx: return avx512 && amx_bits && os_saves_tile_state() && tile_state_granted();
    case Isa::portable: break;
  }
#endif
  return false;
}

Isa detected_isa() {
  for (Isa isa : {Isa::amx, Isa::avx512, Isa::avx2})
    if (runs(isa)) return isa;
  return Isa::portable;
}

Result<Isa> chosen_isa(std::string_view forced) {
  if (forced.empty()) return detected_isa();
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx}) {
    if (isa_name(isa) != forced) continue;
    if (!runs(isa))
      return fail("--cpu-isa ", forced, ": this processor cannot run it (it runs ", isa_name(detected_isa()),
                  " by default)");
    return isa;
  }
  return fail("--cpu-isa ", forced, ": expected portable, avx2, avx512, avx512bf16 or amx");
}

unsigned physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  const unsigned logical = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned cpu = 0; cpu < logical; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream package(base + "physical_package_id"), core(base + "core_id");
    std::string p, c;
    if (!(package >> p) || !(core >> c)) return logical;
    cores.insert({p, c});
  }
  return cores.empty() ? logical : unsigned(cores.size());
}

}  // namespace kipp::cpu
