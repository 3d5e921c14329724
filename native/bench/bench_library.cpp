// libradixkv_bench's own library queries: its ABI version and its thread-local error slot
// (rkv_error.cpp, compiled into this library as into the others).
#include "radixkv_bench.h"
#include "rkv_common.h"

extern "C" {

RKV_API int32_t rkv_bench_abi_version(void) { return RKV_ABI_VERSION; }

RKV_API const char* rkv_bench_last_error(void) { return rkv::last_error(); }

}  // extern "C"
