# Instruction-set flags for the CPU library. -march=native is for C++ only (never passed
# to nvcc); RADIXKV_PORTABLE selects x86-64-v3 (AVX2 + FMA) so the library runs on any
# recent x86 CPU. AVX-512 paths are additionally compiled per function with target
# attributes and chosen at run time, so a portable build still uses them where present.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  if(RADIXKV_PORTABLE)
    set(RADIXKV_CPU_ARCH_FLAGS -march=x86-64-v3 -mtune=generic)
  else()
    set(RADIXKV_CPU_ARCH_FLAGS -march=native)
  endif()
else()
  if(RADIXKV_PORTABLE)
    set(RADIXKV_CPU_ARCH_FLAGS "")
  else()
    set(RADIXKV_CPU_ARCH_FLAGS -mcpu=native)
  endif()
endif()
message(STATUS "radixkv: CPU arch flags: ${RADIXKV_CPU_ARCH_FLAGS}")
