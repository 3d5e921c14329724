// Element-wise dense ops the model families need beyond Llama (CPU): GELU(tanh)*mul (Gemma's
// MLP), per-feature bias add (Qwen2's q/k/v biases), soft cap (Gemma's final logits) and
// scaling (Gemma's embedding scale). f32 throughout; the arithmetic is rkv_dense_math.h's.
#include <omp.h>

#include <cmath>
#include <cstdint>

#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_parallel.h"

namespace {

// Below this many elements an OpenMP region costs more than it saves.
constexpr int64_t kParallelElems = int64_t{1} << 15;

bool overlaps(const void* a, int64_t abytes, const void* b, int64_t bbytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && pa < pb + static_cast<uintptr_t>(bbytes) &&
         pb < pa + static_cast<uintptr_t>(abytes);
}

}  // namespace

extern "C" {

RKV_API int rkv_gelu_tanh_mul(const float* gate_up, float* out, int64_t rows, int32_t inter) {
  RKV_CHECK(rows >= 0, "rkv_gelu_tanh_mul: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(inter > 0, "rkv_gelu_tanh_mul: inter must be positive, got %d", inter);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(gate_up);
  RKV_CHECK_PTR(out);
  RKV_CHECK(!overlaps(gate_up, rows * 2 * inter * 4, out, rows * inter * 4),
            "rkv_gelu_tanh_mul: out must not overlap gate_up");
  rkv::parallel_for(rows, rows * inter >= kParallelElems, [&](int64_t r) {
    const float* g = gate_up + r * 2 * static_cast<int64_t>(inter);
    const float* u = g + inter;
    float* o = out + r * inter;
#pragma omp simd
    for (int32_t i = 0; i < inter; i++) o[i] = rkv::dense::gelu_tanh(g[i]) * u[i];
  });
  return RKV_OK;
}

RKV_API int rkv_add_bias(float* y, const float* bias, int64_t rows, int32_t n) {
  RKV_CHECK(rows >= 0, "rkv_add_bias: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(n > 0, "rkv_add_bias: n must be positive, got %d", n);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(y);
  RKV_CHECK_PTR(bias);
  RKV_CHECK(!overlaps(y, rows * n * 4, bias, int64_t{n} * 4), "rkv_add_bias: bias must not overlap y");
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
