// One cached ISA probe for the whole library (see rkv_isa.h).
#include "rkv_isa.h"

#include <cstdlib>
#include <cstring>

namespace rkv {

static CpuIsa probe() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  CpuIsa best = kIsaScalar;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    best = kIsaAvx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      best = kIsaAvx512;
  }
  if (const char* env = std::getenv("RADIXKV_ISA")) {
    CpuIsa want = !std::strcmp(env, "scalar") ? kIsaScalar : !std::strcmp(env, "avx2") ? kIsaAvx2 : kIsaAvx512;
    if (want < best) best = want;
  }
  return best;
#else
  return kIsaScalar;
#endif
}

CpuIsa cpu_isa() {
  static const CpuIsa isa = probe();  // thread-safe one-time initialization
  return isa;
}

bool cpu_avx512_bf16() {
#if defined(__x86_64__)
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

bool cpu_avx512_vbmi() {
#if defined(__x86_64__)
  static const bool yes = [] {
    __builtin_cpu_init();
    return cpu_isa() == kIsaAvx512 && __builtin_cpu_supports("avx512vbmi") && std::getenv("RADIXKV_ISA") == nullptr;
  }();
  return yes;
#else
  return false;
#endif
}

bool cpu_avx512_vnni() {
#if defined(__x86_64__)
  static const bool yes = [] {
    __builtin_cpu_init();
    return cpu_isa() == kIsaAvx512 && __builtin_cpu_supports("avx512vnni") && std::getenv("RADIXKV_ISA") == nullptr;
  }();
  return yes;
#else
  return false;
#endif
}

bool onednn_gemms() {
#if defined(RKV_HAVE_DNNL)
  static const bool on = [] {
    const char* e = std::getenv("RADIXKV_ONEDNN");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return on;
#else
  return false;
#endif
}

// A 0 / 1 choice from the environment variable `name` where it is set to "0" or "1", else the
// default.
static bool env_choice(const char* name, bool fallback) {
  const char* e = std::getenv(name);
  if (e != nullptr && (std::strcmp(e, "0") == 0 || std::strcmp(e, "1") == 0)) return e[0] == '1';
  return fallback;
}

// __builtin_cpu_is(name) on x86-64; false elsewhere.
#if defined(__x86_64__)
#define RKV_CPU_IS(name) (__builtin_cpu_init(), __builtin_cpu_is(name) != 0)
#else
#define RKV_CPU_IS(name) false
#endif

bool far_prefetch_l2() {
  static const bool on = env_choice("RADIXKV_FAR_PREFETCH", RKV_CPU_IS("intel"));
  return on;
}

bool gemv_x_chunk_l2() {
  static const bool on = env_choice("RADIXKV_GEMV_X_L2", RKV_CPU_IS("znver1"));
  return on;
}

bool gemv_up_to_32_rows() {
  static const bool on = env_choice("RADIXKV_GEMV_32", RKV_CPU_IS("znver1"));
  return on;
}

bool avx2_bf16_pairs() {
  static const bool on = env_choice("RADIXKV_AVX2_BF16_PAIRS", RKV_CPU_IS("znver1"));
  return on;
}

bool decode_groups_of_8() {
  static const bool on = env_choice("RADIXKV_DECODE_GROUP_8", RKV_CPU_IS("znver1"));
  return on;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case kIsaAvx512: return "avx512";
    case kIsaAvx2: return "avx2";
    default: return "scalar";
  }
}

}  // namespace rkv
