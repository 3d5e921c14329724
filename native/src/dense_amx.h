// The packed bf16 GEMV on AMX tiles (dense_amx.cpp): 8 to 16 rows of x against packed bf16
// panels ([k/2][64][2], which is AMX's VNNI layout for B, 16 columns at a time at a 256-byte row
// stride), where vdpbf16ps bounds the AVX-512 passes on an Intel core (one Emerald Rapids core:
// bf16 m = 8 / 12 at 0.6 / 0.4 of read with the same MAC rate as f32 FMAs).
#pragma once

#include <stdint.h>

namespace rkv {
namespace dense {

// How the AMX path runs: not at all; on the CPU's tiles; or through a scalar emulation of the
// same tile operations (tileloadd, tdpbf16ps, tilestored: Intel's pseudocode), so that the
// kernel's layout arithmetic is tested on CPUs without AMX. RADIXKV_AMX in the environment, read
// once: unset or "0" off (the hardware path has not yet run on an AMX CPU: it stays opt-in until
// scripts/gpu-check's native tests have passed it on one), "1" the tiles where the CPU has
// AMX-BF16 and Linux grants the process its tile data (arch_prctl), else off, "emulate" the
// emulation on any CPU with AVX-512 (slow; for the tests).
enum class AmxMode { kOff, kHardware, kEmulated };
AmxMode amx_mode();
const char* amx_mode_name(AmxMode mode);

// y[m, 64 p0 .. 64 p1) (+)= xa[m, k] . w^T over packed bf16 panels [p0, p1), 1 <= m <= 16,
// k % 32 == 0; xa bf16 row-major (row stride k). mode is kHardware or kEmulated.
void amx_bf16_panels(AmxMode mode, const uint16_t* xa, const uint8_t* w, float* y, int64_t m, int64_t n, int64_t k,
                     int64_t p0, int64_t p1, bool acc);

}  // namespace dense
}  // namespace rkv
