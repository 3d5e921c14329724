// Library-wide entry points: last error, version, build/CPU description, threads.
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "dense_amx.h"
#include "rkv_common.h"
#include "quant_dequant.h"
#include "rkv_isa.h"

namespace rkv {

static int g_default_threads = 0;

}  // namespace rkv

extern "C" {

RKV_API const char* rkv_last_error(void) { return rkv::last_error(); }

RKV_API int32_t rkv_abi_version(void) { return RKV_ABI_VERSION; }

RKV_API const char* rkv_build_info(void) {
  static thread_local std::string info;
  info.clear();
  info += "compiler=";
#if defined(__clang__)
  info += "clang " __clang_version__;
#elif defined(__GNUC__)
  info += "gcc " __VERSION__;
#endif
  info += "; compiled_isa=";
#if defined(__AVX512F__)
  info += "avx512f";
#elif defined(__AVX2__)
  info += "avx2";
#else
  info += "baseline";
#endif
  info += "; cpu=";
#if defined(__x86_64__)
  __builtin_cpu_init();
  const char* feats[] = {"avx2",       "fma",        "avx512f",    "avx512bw", "avx512vl",
                         "avx512vbmi", "avx512bf16", "avx512fp16", "amx-tile", "amx-bf16"};
  bool first = true;
  for (const char* f : feats) {
    bool has = false;
    if (!std::strcmp(f, "avx2")) has = __builtin_cpu_supports("avx2");
    else if (!std::strcmp(f, "fma")) has = __builtin_cpu_supports("fma");
    else if (!std::strcmp(f, "avx512f")) has = __builtin_cpu_supports("avx512f");
    else if (!std::strcmp(f, "avx512bw")) has = __builtin_cpu_supports("avx512bw");
    else if (!std::strcmp(f, "avx512vl")) has = __builtin_cpu_supports("avx512vl");
    else if (!std::strcmp(f, "avx512vbmi")) has = __builtin_cpu_supports("avx512vbmi");
    else if (!std::strcmp(f, "avx512bf16")) has = __builtin_cpu_supports("avx512bf16");
    else if (!std::strcmp(f, "avx512fp16")) has = __builtin_cpu_supports("avx512fp16");
    else if (!std::strcmp(f, "amx-tile")) has = __builtin_cpu_supports("amx-tile");
    else if (!std::strcmp(f, "amx-bf16")) has = __builtin_cpu_supports("amx-bf16");
    if (has) {
      if (!first) info += ",";
      info += f;
      first = false;
    }
  }
#else
  info += "non-x86";
#endif
  info += "; omp_threads=" + std::to_string(omp_get_max_threads());
#if defined(RKV_HAVE_DNNL)
  info += rkv::onednn_gemms() ? "; gemm=onednn" : "; gemm=builtin (RADIXKV_ONEDNN=0)";
#else
  info += "; gemm=builtin";
#endif
  info += rkv::far_prefetch_l2() ? "; far_prefetch=l2" : "; far_prefetch=off";
  info += rkv::gemv_x_chunk_l2() ? "; gemv_x=l2" : "; gemv_x=l1";
  info += rkv::gemv_up_to_32_rows() ? "; gemv_rows=32" : "; gemv_rows=16";
  info += rkv::avx2_bf16_pairs() ? "; avx2_bf16_pairs=on" : "; avx2_bf16_pairs=off";
  info += rkv::decode_groups_of_8() ? "; decode_group=8" : "; decode_group=4";
  info += std::string("; quant_dot=") + rkv::quant::dot_path_name();
  info += std::string("; amx=") + rkv::dense::amx_mode_name(rkv::dense::amx_mode());
  return info.c_str();
}

RKV_API int32_t rkv_set_num_threads(int32_t n) {
  if (rkv::g_default_threads == 0) rkv::g_default_threads = omp_get_max_threads();
  omp_set_num_threads(n > 0 ? n : rkv::g_default_threads);
  return RKV_OK;
}

RKV_API int32_t rkv_get_num_threads(void) { return omp_get_max_threads(); }

RKV_API int32_t rkv_dtype_size(int32_t dtype) {
  int s = rkv::dtype_size(dtype);
  if (s < 0) return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "unknown dtype %d", dtype);
  return s;
}

}  // extern "C"
