// OpenMP regions that are skipped, not entered with one thread, when a call is too small to
// split. `#pragma omp parallel if (false)` (or num_threads(1)) still builds a team: libgomp
// allocates it and signals its thread pool, about 270 ns per call on Zen 5 (glibc, GCC 12),
// which every small call of a decode step (one token's norm, RoPE, KV scatter, on every layer)
// paid for nothing. A body keeps its orphaned `#pragma omp for` / `barrier` / `critical`:
// outside a parallel region they bind to a team of one (a loop runs whole on the caller).
#pragma once

#include <stdint.h>

namespace rkv {

// body() on every thread of a parallel region, or once on the calling thread.
template <typename Body>
inline void parallel_region(bool parallel, Body&& body) {
  if (parallel) {
#pragma omp parallel
    body();
  } else {
    body();
  }
}

// body() on every thread of a region of `threads` threads; once on the caller for 1 or fewer.
template <typename Body>
inline void parallel_region_n(int threads, Body&& body) {
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body();
  } else {
    body();
  }
}

// body(i) for every i in [0, n), split statically over the threads when parallel.
template <typename Body>
inline void parallel_for(int64_t n, bool parallel, Body&& body) {
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) body(i);
  } else {
    for (int64_t i = 0; i < n; i++) body(i);
  }
}

// parallel_for over `threads` threads (1 or fewer: the caller alone).
template <typename Body>
inline void parallel_for_n(int64_t n, int threads, Body&& body) {
  if (threads > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) body(i);
  } else {
    for (int64_t i = 0; i < n; i++) body(i);
  }
}

// parallel_for of an element-wise body, vectorized (omp simd) in each thread's range.
template <typename Body>
inline void parallel_for_simd(int64_t n, bool parallel, Body&& body) {
  if (parallel) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) body(i);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) body(i);
  }
}

}  // namespace rkv
