// Shared by the native tests whose library code is dispatched by ISA: the library probes the
// CPU once per process (rkv_isa.h), so a test checks the lower paths by running itself again
// with RADIXKV_ISA=avx2 and =scalar (AVX-512, where present, is the first run's best ISA).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

// The ISA this process was asked to use ("best" when RADIXKV_ISA is unset).
inline const char* requested_isa() {
  const char* e = std::getenv("RADIXKV_ISA");
  return e ? e : "best";
}

// In the first run (RADIXKV_ISA unset): runs `self` again once per lower ISA; returns 1 when
// any of those runs failed, else 0. In a re-run it does nothing.
inline int rerun_lower_isas(const char* self) {
  if (std::getenv("RADIXKV_ISA")) return 0;
  int failed = 0;
  for (const char* isa : {"avx2", "scalar"}) {
    std::string cmd = std::string("RADIXKV_ISA=") + isa + " '" + self + "'";
    std::printf("-- re-running with RADIXKV_ISA=%s\n", isa);
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) failed = 1;
  }
  return failed;
}
