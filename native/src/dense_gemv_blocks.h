// The rows of x in blocks of at most 4, as the register tiles of both small-m paths (widened
// weights, dense_gemv_impl.h; bf16 dot products, dense_gemv.cpp) take them: f(MR, i0) for each
// block, MR a std::integral_constant (the tile's row count), i0 its first row. Included inside
// each ISA's namespace, under its `#pragma GCC target`, so that it and the tiles it calls inline
// into one another; no include guard on purpose (one copy per namespace).
template <typename F>
static inline void for_x_blocks(int64_t m, const F& f) {
  for (int64_t i0 = 0; i0 < m; i0 += 4) {
    switch (m - i0 < 4 ? m - i0 : 4) {
      case 4: f(std::integral_constant<int, 4>{}, i0); break;
      case 3: f(std::integral_constant<int, 3>{}, i0); break;
      case 2: f(std::integral_constant<int, 2>{}, i0); break;
      default: f(std::integral_constant<int, 1>{}, i0); break;
    }
  }
}
