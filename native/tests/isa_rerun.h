// Shared by the native tests whose library code is dispatched by ISA: the library probes the
// CPU once per process (rkv_isa.h), so a test checks the lower paths by running itself again
// with RADIXKV_ISA=avx2 and =scalar (AVX-512, where present, is the first run's best ISA), and
// with RADIXKV_ISA=avx512 where the first run also had AVX512-VBMI.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// The ISA this process was asked to use ("best" when RADIXKV_ISA is unset).
inline const char* requested_isa() {
  const char* e = std::getenv("RADIXKV_ISA");
  return e ? e : "best";
}

// The environment assignment that picks the other choice of a 0 / 1 rule than this process's:
// `name`=0 where the library's build info holds `on_token` (the rule is on here), else `name`=1.
inline std::string other_choice(const char* build_info, const char* on_token, const char* name) {
  return std::string(name) + (std::strstr(build_info, on_token) != nullptr ? "=0" : "=1");
}

// Runs `self` again with one more environment assignment (`NAME=value`); true when it passed.
inline bool rerun_with(const char* self, const std::string& assignment) {
  std::printf("-- re-running with %s\n", assignment.c_str());
  std::fflush(stdout);
  return std::system((assignment + " '" + self + "'").c_str()) == 0;
}

// In the first run (RADIXKV_ISA unset): runs `self` again once per lower ISA (with
// `base_avx512`, also on AVX-512 without its optional extensions, for a test of code that uses
// them); returns 1 when any of those runs failed, else 0. In a re-run it does nothing.
inline int rerun_lower_isas(const char* self, bool base_avx512 = false) {
  if (std::getenv("RADIXKV_ISA")) return 0;
  int failed = 0;
  std::vector<const char*> lower{"avx2", "scalar"};
#if defined(__x86_64__)
  // AVX-512 without its optional extensions (rkv_isa.h: cpu_avx512_vbmi), where the CPU has them
  __builtin_cpu_init();
  if (base_avx512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vbmi"))
    lower.insert(lower.begin(), "avx512");
#else
  (void)base_avx512;
#endif
  for (const char* isa : lower)
    if (!rerun_with(self, std::string("RADIXKV_ISA=") + isa)) failed = 1;
  return failed;
}
