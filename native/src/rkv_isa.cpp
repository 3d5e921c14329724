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

bool far_prefetch_l2() {
  static const bool on = [] {
    const char* e = std::getenv("RADIXKV_FAR_PREFETCH");
    if (e != nullptr && (std::strcmp(e, "0") == 0 || std::strcmp(e, "1") == 0)) return e[0] == '1';
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") != 0;
#else
    return false;
#endif
  }();
  return on;
}

bool gemv_x_chunk_l2() {
  static const bool on = [] {
    const char* e = std::getenv("RADIXKV_GEMV_X_L2");
    if (e != nullptr && (std::strcmp(e, "0") == 0 || std::strcmp(e, "1") == 0)) return e[0] == '1';
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_is("znver1") != 0;
#else
    return false;
#endif
  }();
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
