#include "runtime/cpu_features.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GRAFT_HAS_CPUID 1
#endif

namespace graft::runtime {
namespace {

// The register state the OS must save on a context switch before the
// registers a feature uses can be relied on (XCR0 bits).
enum class State {
  kNone,
  kAvx,     // SSE and YMM: bits 1, 2
  kAvx512,  // and opmask, ZMM0-15 upper halves, ZMM16-31: bits 5, 6, 7
  kAmx,     // TILECFG and TILEDATA: bits 17, 18
};

enum Register { kEax, kEbx, kEcx, kEdx };

// One feature: a cpuid bit and the state it needs. A bit may name several
// features (LLVM derives "crc32" from SSE4.2 and the APX features from
// APX_F).
struct CpuidBit {
  const char* name;
  uint32_t leaf;
  uint32_t subleaf;
  Register reg;
  int bit;
  State state;
};

// As LLVM 19's sys::getHostCPUFeatures reads them (lib/TargetParser/
// Host.cpp), including its choice of which features need which state.
constexpr CpuidBit kBits[] = {
    {"cx8", 1, 0, kEdx, 8, State::kNone},
    {"cmov", 1, 0, kEdx, 15, State::kNone},
    {"mmx", 1, 0, kEdx, 23, State::kNone},
    {"fxsr", 1, 0, kEdx, 24, State::kNone},
    {"sse", 1, 0, kEdx, 25, State::kNone},
    {"sse2", 1, 0, kEdx, 26, State::kNone},
    {"sse3", 1, 0, kEcx, 0, State::kNone},
    {"pclmul", 1, 0, kEcx, 1, State::kNone},
    {"ssse3", 1, 0, kEcx, 9, State::kNone},
    {"fma", 1, 0, kEcx, 12, State::kAvx},
    {"cx16", 1, 0, kEcx, 13, State::kNone},
    {"sse4.1", 1, 0, kEcx, 19, State::kNone},
    {"sse4.2", 1, 0, kEcx, 20, State::kNone},
    {"crc32", 1, 0, kEcx, 20, State::kNone},
    {"movbe", 1, 0, kEcx, 22, State::kNone},
    {"popcnt", 1, 0, kEcx, 23, State::kNone},
    {"aes", 1, 0, kEcx, 25, State::kNone},
    {"xsave", 1, 0, kEcx, 26, State::kAvx},
    {"avx", 1, 0, kEcx, 28, State::kAvx},
    {"f16c", 1, 0, kEcx, 29, State::kAvx},
    {"rdrnd", 1, 0, kEcx, 30, State::kNone},

    {"fsgsbase", 7, 0, kEbx, 0, State::kNone},
    {"sgx", 7, 0, kEbx, 2, State::kNone},
    {"bmi", 7, 0, kEbx, 3, State::kNone},
    {"avx2", 7, 0, kEbx, 5, State::kAvx},
    {"bmi2", 7, 0, kEbx, 8, State::kNone},
    {"invpcid", 7, 0, kEbx, 10, State::kNone},
    {"rtm", 7, 0, kEbx, 11, State::kNone},
    {"avx512f", 7, 0, kEbx, 16, State::kAvx512},
    {"evex512", 7, 0, kEbx, 16, State::kAvx512},
    {"avx512dq", 7, 0, kEbx, 17, State::kAvx512},
    {"rdseed", 7, 0, kEbx, 18, State::kNone},
    {"adx", 7, 0, kEbx, 19, State::kNone},
    {"avx512ifma", 7, 0, kEbx, 21, State::kAvx512},
    {"clflushopt", 7, 0, kEbx, 23, State::kNone},
    {"clwb", 7, 0, kEbx, 24, State::kNone},
    {"avx512cd", 7, 0, kEbx, 28, State::kAvx512},
    {"sha", 7, 0, kEbx, 29, State::kNone},
    {"avx512bw", 7, 0, kEbx, 30, State::kAvx512},
    {"avx512vl", 7, 0, kEbx, 31, State::kAvx512},
    {"avx512vbmi", 7, 0, kEcx, 1, State::kAvx512},
    {"pku", 7, 0, kEcx, 4, State::kNone},
    {"waitpkg", 7, 0, kEcx, 5, State::kNone},
    {"avx512vbmi2", 7, 0, kEcx, 6, State::kAvx512},
    {"shstk", 7, 0, kEcx, 7, State::kNone},
    {"gfni", 7, 0, kEcx, 8, State::kNone},
    {"vaes", 7, 0, kEcx, 9, State::kAvx},
    {"vpclmulqdq", 7, 0, kEcx, 10, State::kAvx},
    {"avx512vnni", 7, 0, kEcx, 11, State::kAvx512},
    {"avx512bitalg", 7, 0, kEcx, 12, State::kAvx512},
    {"avx512vpopcntdq", 7, 0, kEcx, 14, State::kAvx512},
    {"rdpid", 7, 0, kEcx, 22, State::kNone},
    {"kl", 7, 0, kEcx, 23, State::kNone},
    {"cldemote", 7, 0, kEcx, 25, State::kNone},
    {"movdiri", 7, 0, kEcx, 27, State::kNone},
    {"movdir64b", 7, 0, kEcx, 28, State::kNone},
    {"enqcmd", 7, 0, kEcx, 29, State::kNone},
    {"uintr", 7, 0, kEdx, 5, State::kNone},
    {"avx512vp2intersect", 7, 0, kEdx, 8, State::kAvx512},
    {"serialize", 7, 0, kEdx, 14, State::kNone},
    {"tsxldtrk", 7, 0, kEdx, 16, State::kNone},
    {"pconfig", 7, 0, kEdx, 18, State::kNone},
    {"amx-bf16", 7, 0, kEdx, 22, State::kAmx},
    {"avx512fp16", 7, 0, kEdx, 23, State::kAvx512},
    {"amx-tile", 7, 0, kEdx, 24, State::kAmx},
    {"amx-int8", 7, 0, kEdx, 25, State::kAmx},

    {"sha512", 7, 1, kEax, 0, State::kNone},
    {"sm3", 7, 1, kEax, 1, State::kNone},
    {"sm4", 7, 1, kEax, 2, State::kNone},
    {"raoint", 7, 1, kEax, 3, State::kNone},
    {"avxvnni", 7, 1, kEax, 4, State::kAvx},
    {"avx512bf16", 7, 1, kEax, 5, State::kAvx512},
    {"cmpccxadd", 7, 1, kEax, 7, State::kNone},
    {"amx-fp16", 7, 1, kEax, 21, State::kAmx},
    {"hreset", 7, 1, kEax, 22, State::kNone},
    {"avxifma", 7, 1, kEax, 23, State::kAvx},
    {"avxvnniint8", 7, 1, kEdx, 4, State::kAvx},
    {"avxneconvert", 7, 1, kEdx, 5, State::kAvx},
    {"amx-complex", 7, 1, kEdx, 8, State::kAmx},
    {"avxvnniint16", 7, 1, kEdx, 10, State::kAvx},
    {"prefetchi", 7, 1, kEdx, 14, State::kNone},
    {"usermsr", 7, 1, kEdx, 15, State::kNone},
    // LLVM asks no OS state of AVX10; its registers are AVX-512's.
    {"avx10.1-256", 7, 1, kEdx, 19, State::kAvx512},
    {"egpr", 7, 1, kEdx, 21, State::kNone},
    {"push2pop2", 7, 1, kEdx, 21, State::kNone},
    {"ppx", 7, 1, kEdx, 21, State::kNone},
    {"ndd", 7, 1, kEdx, 21, State::kNone},
    {"ccmp", 7, 1, kEdx, 21, State::kNone},
    {"cf", 7, 1, kEdx, 21, State::kNone},

    {"xsaveopt", 0xd, 1, kEax, 0, State::kAvx},
    {"xsavec", 0xd, 1, kEax, 1, State::kAvx},
    {"xsaves", 0xd, 1, kEax, 3, State::kAvx},
    {"ptwrite", 0x14, 0, kEbx, 4, State::kNone},
    {"widekl", 0x19, 0, kEbx, 2, State::kNone},

    {"sahf", 0x80000001, 0, kEcx, 0, State::kNone},
    {"lzcnt", 0x80000001, 0, kEcx, 5, State::kNone},
    {"sse4a", 0x80000001, 0, kEcx, 6, State::kNone},
    {"prfchw", 0x80000001, 0, kEcx, 8, State::kNone},
    {"xop", 0x80000001, 0, kEcx, 11, State::kAvx},
    {"lwp", 0x80000001, 0, kEcx, 15, State::kNone},
    {"fma4", 0x80000001, 0, kEcx, 16, State::kAvx},
    {"tbm", 0x80000001, 0, kEcx, 21, State::kNone},
    {"mwaitx", 0x80000001, 0, kEcx, 29, State::kNone},
    {"64bit", 0x80000001, 0, kEdx, 29, State::kNone},
    {"clzero", 0x80000008, 0, kEbx, 0, State::kNone},
    {"rdpru", 0x80000008, 0, kEbx, 4, State::kNone},
    {"wbnoinvd", 0x80000008, 0, kEbx, 9, State::kNone},
};

// Needs avx10.1-256 and the 512-bit vector length of leaf 0x24.
constexpr char kAvx10_512[] = "avx10.1-512";

#if defined(GRAFT_HAS_CPUID)

// One cpuid result; zeros for a leaf or subleaf the CPU does not have.
struct Cpuid {
  uint32_t reg[4] = {0, 0, 0, 0};

  Cpuid(uint32_t leaf, uint32_t subleaf) {
    // Leaf 7 reports its highest subleaf in subleaf 0's EAX; some CPUs
    // return garbage rather than zeros past it.
    if (leaf == 7 && subleaf > 0 && Cpuid(7, 0).reg[kEax] < subleaf) return;
    // __get_cpuid_count checks the leaf against the highest basic or
    // extended leaf.
    if (__get_cpuid_count(leaf, subleaf, &reg[kEax], &reg[kEbx], &reg[kEcx],
                          &reg[kEdx]) == 0) {
      reg[kEax] = reg[kEbx] = reg[kEcx] = reg[kEdx] = 0;
    }
  }
  bool Bit(Register r, int bit) const { return (reg[r] >> bit) & 1; }
};

// XCR0, the register state the OS saves; zero where the OS has not enabled
// xgetbv (OSXSAVE).
uint64_t EnabledState() {
  if (!Cpuid(1, 0).Bit(kEcx, 27)) return 0;
  uint32_t eax = 0;
  uint32_t edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

bool StateEnabled(State state, uint64_t xcr0, bool has_avx) {
  constexpr uint64_t kYmm = 0x6;
  constexpr uint64_t kZmm = 0xe0;
  constexpr uint64_t kTiles = (uint64_t{1} << 17) | (uint64_t{1} << 18);
  const bool avx = has_avx && (xcr0 & kYmm) == kYmm;
  switch (state) {
    case State::kNone:
      return true;
    case State::kAvx:
      return avx;
    case State::kAvx512:
      return avx && (xcr0 & kZmm) == kZmm;
    case State::kAmx:
      return (xcr0 & kTiles) == kTiles;
  }
  return false;
}

std::set<std::string> Detect() {
  std::set<std::string> features;
  if (Cpuid(0, 0).reg[kEax] < 1) return features;
  const uint64_t xcr0 = EnabledState();
  // The OS state means nothing for AVX unless the CPU has AVX itself.
  const bool has_avx = Cpuid(1, 0).Bit(kEcx, 28);
  // cpuid traps to the hypervisor in a virtual machine: ask once per leaf.
  std::map<std::pair<uint32_t, uint32_t>, Cpuid> leaves;
  for (const CpuidBit& b : kBits) {
    const Cpuid& leaf =
        leaves.try_emplace({b.leaf, b.subleaf}, b.leaf, b.subleaf)
            .first->second;
    if (leaf.Bit(b.reg, b.bit) && StateEnabled(b.state, xcr0, has_avx)) {
      features.insert(b.name);
    }
  }
  if (features.count("avx10.1-256") != 0 && Cpuid(0x24, 0).Bit(kEbx, 18)) {
    features.insert(kAvx10_512);
  }
  return features;
}

#else

std::set<std::string> Detect() { return {}; }

#endif  // defined(GRAFT_HAS_CPUID)

}  // namespace

const std::set<std::string>& HostCpuFeatures() {
  static const auto* const features = new std::set<std::string>(Detect());
  return *features;
}

bool IsKnownCpuFeature(absl::string_view name) {
#if defined(GRAFT_HAS_CPUID)
  if (name == kAvx10_512) return true;
  for (const CpuidBit& b : kBits) {
    if (name == b.name) return true;
  }
#endif
  return false;
}

}  // namespace graft::runtime
