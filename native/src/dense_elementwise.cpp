// Element-wise dense ops of the model families (CPU): SiLU(gate)*up (Llama's MLP), GELU(tanh)*mul
// (Gemma's), per-feature bias add (Qwen2's q/k/v biases), soft cap (Gemma's final logits) and
// scaling (Gemma's embedding scale). f32 throughout; the arithmetic is rkv_dense_math.h's.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>


#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_exp_avx2.h"
#include "rkv_parallel.h"

namespace {

// Below this many elements an OpenMP region costs more than it saves.
constexpr int64_t kParallelElems = int64_t{1} << 15;

// out[r, :] = act(gate[r, :]) * up[r, :] for gate_up rows [gate | up] of 2 * inter: SiLU, or
// GELU(tanh) where Gelu. Both are x / (1 + exp_approx(arg)) (rkv_dense_math.h): 8 lanes at a time
// where AVX2 is compiled in (the portable build's baseline), the scalar functions for the rest;
// both give the same bits.
template <bool Gelu>
int gated_mul(const char* name, const float* gate_up, float* out, int64_t rows, int32_t inter) {
  RKV_CHECK(rows >= 0, "%s: rows must not be negative, got %lld", name, static_cast<long long>(rows));
  RKV_CHECK(inter > 0, "%s: inter must be positive, got %d", name, inter);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(gate_up);
  RKV_CHECK_PTR(out);
  RKV_CHECK(!rkv::overlaps(gate_up, rows * 2 * inter * 4, out, rows * inter * 4), "%s: out must not overlap gate_up", name);
  rkv::parallel_for(rows, rows * inter >= kParallelElems, [&](int64_t r) {
    const float* g = gate_up + r * 2 * static_cast<int64_t>(inter);
    const float* u = g + inter;
    float* o = out + r * inter;
    int32_t i = 0;
#if defined(RKV_EXP_AVX2)
    for (; i + 8 <= inter; i += 8) {
      const __m256 x = _mm256_loadu_ps(g + i);
      __m256 arg;
      if constexpr (Gelu) {
        const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), x);
        arg = _mm256_mul_ps(_mm256_set1_ps(-2.f),
                            _mm256_mul_ps(_mm256_set1_ps(rkv::dense::kGeluTanhC), _mm256_fmadd_ps(x3, x, x)));
      } else {
        arg = _mm256_xor_ps(x, _mm256_set1_ps(-0.f));  // -x
      }
      const __m256 act = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.f), rkv::dense::exp_approx8(arg)));
      _mm256_storeu_ps(o + i, _mm256_mul_ps(act, _mm256_loadu_ps(u + i)));
    }
#endif
    for (; i < inter; i++) o[i] = (Gelu ? rkv::dense::gelu_tanh(g[i]) : rkv::dense::silu(g[i])) * u[i];
  });
  return RKV_OK;
}

}  // namespace

extern "C" {

RKV_API int rkv_silu_mul(const float* gate_up, float* out, int64_t rows, int32_t inter) {
  return gated_mul<false>("rkv_silu_mul", gate_up, out, rows, inter);
}

RKV_API int rkv_gelu_tanh_mul(const float* gate_up, float* out, int64_t rows, int32_t inter) {
  return gated_mul<true>("rkv_gelu_tanh_mul", gate_up, out, rows, inter);
}

RKV_API int rkv_add_bias(float* y, const float* bias, int64_t rows, int32_t n) {
  RKV_CHECK(rows >= 0, "rkv_add_bias: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(n > 0, "rkv_add_bias: n must be positive, got %d", n);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(y);
  RKV_CHECK_PTR(bias);
  RKV_CHECK(!rkv::overlaps(y, rows * n * 4, bias, int64_t{n} * 4), "rkv_add_bias: bias must not overlap y");
  rkv::parallel_for(rows, rows * n >= kParallelElems, [&](int64_t r) {
    float* yr = y + r * n;
#pragma omp simd
    for (int32_t i = 0; i < n; i++) yr[i] += bias[i];
  });
  return RKV_OK;
}

RKV_API int rkv_soft_cap(float* x, int64_t n, float cap) {
  RKV_CHECK(n >= 0, "rkv_soft_cap: n must not be negative, got %lld", static_cast<long long>(n));
  RKV_CHECK(std::isfinite(cap) && cap > 0, "rkv_soft_cap: cap must be positive and finite, got %g", cap);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  rkv::parallel_for_simd(n, n >= kParallelElems, [&](int64_t i) { x[i] = rkv::dense::soft_cap(x[i], cap); });
  return RKV_OK;
}

RKV_API int rkv_scale(float* x, int64_t n, float s) {
  RKV_CHECK(n >= 0, "rkv_scale: n must not be negative, got %lld", static_cast<long long>(n));
  RKV_CHECK(std::isfinite(s), "rkv_scale: s must be finite, got %g", s);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  rkv::parallel_for_simd(n, n >= 4 * kParallelElems, [&](int64_t i) { x[i] *= s; });
  return RKV_OK;
}

}  // extern "C"
