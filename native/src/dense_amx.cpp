// The packed bf16 GEMV on AMX tiles (dense_amx.h). Per 64-row panel, four C tiles of m x 16 f32
// (one per 16 output columns) accumulate over k in steps of 32: one A tile of x (m rows x 16
// bf16 pairs, row stride k), and per C tile one B tile of 16 k-pairs x 16 columns, read from the
// panel at a 256-byte row stride (the panel is [k/2][64][2]: a k-pair's 64 columns are 256 bytes,
// and columns 16 v .. 16 v + 15 start at byte 64 v). The four B tiles of a step cover 4 KiB of the
// panel in address order. The tile operations are inline assembly with memory clobbers (GCC's
// AMX intrinsics tell the compiler of no memory access, nor all 64 bytes of the configuration);
// the emulation follows Intel's pseudocode for the same instructions.
#include "dense_amx.h"

#include <cstdlib>
#include <cstring>

#include "dense_packed.h"
#include "rkv_dtype.h"
#include "rkv_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rkv {
namespace dense {

namespace {

// Linux grants a process AMX tile data only on request (arch/x86/include/uapi/asm/prctl.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool hardware_amx() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16") || cpu_isa() != kIsaAvx512 ||
      !cpu_avx512_bf16())
    return false;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

AmxMode amx_mode() {
  static const AmxMode mode = [] {
    const char* e = std::getenv("RADIXKV_AMX");
    if (e == nullptr) return AmxMode::kOff;
    if (std::strcmp(e, "1") == 0) return hardware_amx() ? AmxMode::kHardware : AmxMode::kOff;
    if (std::strcmp(e, "emulate") == 0 && cpu_isa() == kIsaAvx512 && cpu_avx512_bf16()) return AmxMode::kEmulated;
    return AmxMode::kOff;
  }();
  return mode;
}

const char* amx_mode_name(AmxMode mode) {
  switch (mode) {
    case AmxMode::kHardware: return "tiles";
    case AmxMode::kEmulated: return "emulated";
    default: return "off";
  }
}

#if defined(__x86_64__)
namespace {

// ldtilecfg's 64 bytes: palette 1, then per tile its bytes per row and its rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// Tiles 0-3: C (m x 16 f32); 4: A (m x 16 bf16 pairs of x); 5-7: B (16 k-pairs x 16 columns).
TileConfig tile_config(int m) {
  TileConfig c;
  for (int t = 0; t < 8; t++) {
    c.colsb[t] = 64;
    c.rows[t] = static_cast<uint8_t>(t < 5 ? m : 16);
  }
  return c;
}

#define RKV_TILE_LOAD(t, base, stride) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define RKV_TILE_STORE(t, base, stride) \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"(static_cast<long>(stride)) : "memory")

// The CPU's tiles.
struct HardwareTiles {
  void config(const TileConfig& c) { __asm__ volatile("ldtilecfg %0" ::"m"(c) : "memory"); }
  void release() { __asm__ volatile("tilerelease" ::: "memory"); }
  template <int T>
  void zero() {
    static_assert(T >= 0 && T < 4, "only C tiles are zeroed");
    if constexpr (T == 0) __asm__ volatile("tilezero %%tmm0" ::);
    else if constexpr (T == 1) __asm__ volatile("tilezero %%tmm1" ::);
    else if constexpr (T == 2) __asm__ volatile("tilezero %%tmm2" ::);
    else __asm__ volatile("tilezero %%tmm3" ::);
  }
  template <int T>
  void load(const void* p, int64_t stride) {
    static_assert(T >= 4 && T < 8, "only A and B tiles are loaded");
    if constexpr (T == 4) RKV_TILE_LOAD(4, p, stride);
    else if constexpr (T == 5) RKV_TILE_LOAD(5, p, stride);
    else if constexpr (T == 6) RKV_TILE_LOAD(6, p, stride);
    else RKV_TILE_LOAD(7, p, stride);
  }
  template <int T>
  void store(void* p, int64_t stride) {
    static_assert(T >= 0 && T < 4, "only C tiles are stored");
    if constexpr (T == 0) RKV_TILE_STORE(0, p, stride);
    else if constexpr (T == 1) RKV_TILE_STORE(1, p, stride);
    else if constexpr (T == 2) RKV_TILE_STORE(2, p, stride);
    else RKV_TILE_STORE(3, p, stride);
  }
  // C += A . B (tdpbf16ps C, A, B; AT&T order: B, A, C)
  template <int C, int B>
  void dp() {
    static_assert(C >= 0 && C < 4 && B >= 5 && B < 8, "C tile 0-3, A tile 4, B tile 5-7");
    if constexpr (C == 0 && B == 5) __asm__ volatile("tdpbf16ps %%tmm5, %%tmm4, %%tmm0" ::);
    else if constexpr (C == 1 && B == 6) __asm__ volatile("tdpbf16ps %%tmm6, %%tmm4, %%tmm1" ::);
    else if constexpr (C == 2 && B == 7) __asm__ volatile("tdpbf16ps %%tmm7, %%tmm4, %%tmm2" ::);
    else if constexpr (C == 3 && B == 5) __asm__ volatile("tdpbf16ps %%tmm5, %%tmm4, %%tmm3" ::);
    else static_assert(C < 0, "the kernel pairs C 0-3 with B 5, 6, 7, 5");
  }
};

#undef RKV_TILE_LOAD
#undef RKV_TILE_STORE

// The same operations on memory, as Intel's pseudocode defines them: tileloadd fills a tile's
// configured rows and bytes (the rest of each row zero); tdpbf16ps adds, per row m of C and
// column n, a.bf16[2k] * b.row[k].bf16[2n] and then a.bf16[2k + 1] * b.row[k].bf16[2n + 1] for
// every k-pair of A's row, in f32 with round to nearest even, bf16 inputs whose exponent is zero
// read as zero and subnormal results flushed to zero.
struct EmulatedTiles {
  struct Tile {
    alignas(64) uint8_t bytes[16][64];
    int rows = 0, colsb = 0;
  };
  Tile t[8];

  void config(const TileConfig& c) {
    for (int i = 0; i < 8; i++) {
      t[i].rows = c.rows[i];
      t[i].colsb = c.colsb[i];
      std::memset(t[i].bytes, 0, sizeof t[i].bytes);
    }
  }
  void release() {}
  template <int T>
  void zero() {
    std::memset(t[T].bytes, 0, sizeof t[T].bytes);
  }
  template <int T>
  void load(const void* p, int64_t stride) {
    std::memset(t[T].bytes, 0, sizeof t[T].bytes);
    for (int r = 0; r < t[T].rows; r++)
      std::memcpy(t[T].bytes[r], static_cast<const uint8_t*>(p) + r * stride, static_cast<size_t>(t[T].colsb));
  }
  template <int T>
  void store(void* p, int64_t stride) {
    for (int r = 0; r < t[T].rows; r++)
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, t[T].bytes[r], static_cast<size_t>(t[T].colsb));
  }
  static float bf16_daz(const uint8_t* at) {
    uint16_t h;
    std::memcpy(&h, at, 2);
    return bf16_to_float((h & 0x7F80u) == 0 ? static_cast<uint16_t>(h & 0x8000u) : h);
  }
  static float ftz(float f) {
    const uint32_t bits = f32_bits(f);
    return (bits & 0x7F800000u) == 0 ? bits_f32(bits & 0x80000000u) : f;
  }
  template <int C, int B>
  void dp() {
    Tile& c = t[C];
    const Tile& a = t[4];
    const Tile& b = t[B];
    for (int m = 0; m < c.rows; m++)
      for (int kp = 0; kp < a.colsb / 4; kp++)
        for (int n = 0; n < c.colsb / 4; n++) {
          float acc;
          std::memcpy(&acc, c.bytes[m] + 4 * n, 4);
          // separate statements: each product (exact, bf16 x bf16) is rounded once by its add
          const float p0 = bf16_daz(a.bytes[m] + 4 * kp) * bf16_daz(b.bytes[kp] + 4 * n);
          acc = ftz(acc + p0);
          const float p1 = bf16_daz(a.bytes[m] + 4 * kp + 2) * bf16_daz(b.bytes[kp] + 4 * n + 2);
          acc = ftz(acc + p1);
          std::memcpy(c.bytes[m] + 4 * n, &acc, 4);
        }
  }
};

// Prefetches of the panel, a quarter of a step's 4 KiB beside each B tile load:
// kAmxPrefetchBytes ahead into L1, and where far_prefetch_l2() (Intel CPUs, which every AMX CPU
// is) kAmxFarPrefetchBytes ahead into L2, as the AVX-512 passes do. Not yet tuned: no AMX CPU
// has run this kernel.
constexpr int64_t kAmxPrefetchBytes = 8192;
constexpr int64_t kAmxFarPrefetchBytes = 32768;

template <typename Tiles>
__attribute__((target("avx512f"))) void panels_on(Tiles& tiles, const uint16_t* xa, const uint8_t* w, float* y,
                                                  int64_t m, int64_t n, int64_t k, int64_t p0, int64_t p1, bool acc) {
  constexpr int64_t kStepBytes = 2 * kPackedPanelRows * 2;  // one k-pair of a panel: 256 bytes
  const int64_t panel_bytes = k / 2 * kStepBytes, x_stride = 2 * k;
  const int64_t far = far_prefetch_l2() ? kAmxFarPrefetchBytes : 0;
  alignas(64) float yb[16 * kPackedPanelRows];
  tiles.config(tile_config(static_cast<int>(m)));
  for (int64_t p = p0; p < p1; p++) {
    const uint8_t* panel = w + p * panel_bytes;
    tiles.template zero<0>();
    tiles.template zero<1>();
    tiles.template zero<2>();
    tiles.template zero<3>();
    for (int64_t c = 0; c < k; c += 32) {
      const uint8_t* blk = panel + c / 2 * kStepBytes;  // 16 k-pairs: 4 KiB
      tiles.template load<4>(xa + c, x_stride);
      tiles.template load<5>(blk, kStepBytes);
      prefetch_stream(blk, 1024, kAmxPrefetchBytes, far);
      tiles.template dp<0, 5>();
      tiles.template load<6>(blk + 64, kStepBytes);
      prefetch_stream(blk + 1024, 1024, kAmxPrefetchBytes, far);
      tiles.template dp<1, 6>();
      tiles.template load<7>(blk + 128, kStepBytes);
      prefetch_stream(blk + 2048, 1024, kAmxPrefetchBytes, far);
      tiles.template dp<2, 7>();
      tiles.template load<5>(blk + 192, kStepBytes);
      prefetch_stream(blk + 3072, 1024, kAmxPrefetchBytes, far);
      tiles.template dp<3, 5>();
    }
    // C tile v holds columns 16 v .. 16 v + 15 of the m rows: into yb at a row stride of 64 floats
    tiles.template store<0>(yb, 4 * kPackedPanelRows);
    tiles.template store<1>(yb + 16, 4 * kPackedPanelRows);
    tiles.template store<2>(yb + 32, 4 * kPackedPanelRows);
    tiles.template store<3>(yb + 48, 4 * kPackedPanelRows);
    for (int64_t i = 0; i < m; i++)
      for (int v = 0; v < 4; v++) {
        const __m512 s = _mm512_load_ps(yb + i * kPackedPanelRows + 16 * v);
        float* out = y + i * n + p * kPackedPanelRows + 16 * v;
        _mm512_storeu_ps(out, acc ? _mm512_add_ps(_mm512_loadu_ps(out), s) : s);
      }
  }
  tiles.release();
}

}  // namespace

void amx_bf16_panels(AmxMode mode, const uint16_t* xa, const uint8_t* w, float* y, int64_t m, int64_t n, int64_t k,
                     int64_t p0, int64_t p1, bool acc) {
  if (mode == AmxMode::kHardware) {
    HardwareTiles tiles;
    panels_on(tiles, xa, w, y, m, n, k, p0, p1, acc);
  } else {
    EmulatedTiles tiles;
    panels_on(tiles, xa, w, y, m, n, k, p0, p1, acc);
  }
}
#else
void amx_bf16_panels(AmxMode, const uint16_t*, const uint8_t*, float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                     bool) {}
#endif

}  // namespace dense
}  // namespace rkv
