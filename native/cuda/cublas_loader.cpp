// dlopen-based loader of libcublas (see cublas_loader.h). libcublasLt, which cublasGemmEx
// uses internally, is a DT_NEEDED dependency of libcublas and comes with it.
#include "cublas_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "rkv_common.h"

namespace rkv_cublas {
namespace {

struct Loaded {
  Api api{};
  bool ok = false;
  std::string error;  // why not ok; repeated into the caller's error slot on every call
};

void* open_first(std::string& tried, std::string& path_out) {
  const char* names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"};
  std::string dirs[3];
  int nd = 0;
  if (const char* h = std::getenv("CUDA_HOME")) dirs[nd++] = std::string(h) + "/lib64/";
  dirs[nd++] = "/usr/local/cuda/lib64/";
  if (const char* explicit_path = std::getenv("RADIXKV_CUBLAS")) {
    if (*explicit_path) {
      tried = explicit_path;
      void* h = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
      if (h) path_out = explicit_path;
      if (!h) {
        const char* e = dlerror();
        tried += std::string(" (") + (e ? e : "dlopen failed") + ")";
      }
      return h;  // an explicit choice is never second-guessed
    }
  }
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      path_out = n;
      return h;
    }
  }
  for (int d = 0; d < nd; d++) {
    for (const char* n : names) {
      std::string p = dirs[d] + n;
      if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        path_out = p;
        return h;
      }
    }
  }
  tried = "libcublas.so.13/.12/.11/libcublas.so on the loader path";
  for (int d = 0; d < nd; d++) tried += ", " + dirs[d];
  return nullptr;
}

template <typename F>
bool resolve(void* h, const char* name, F& out, Loaded& l) {
  out = reinterpret_cast<F>(dlsym(h, name));
  if (!out) l.error = std::string("cuBLAS symbol ") + name + " not found in " + l.api.library;
  return out != nullptr;
}

const Loaded& load() {
  static Loaded l;
  static std::string library;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    void* h = open_first(tried, library);
    if (!h) {
      l.error = "libcublas not found (tried " + tried +
                "): install the CUDA toolkit's cuBLAS or set RADIXKV_CUBLAS to its path";
      return;
    }
    l.api.library = library.c_str();
    l.ok = resolve(h, "cublasCreate_v2", l.api.create, l) && resolve(h, "cublasSetStream_v2", l.api.set_stream, l) &&
           resolve(h, "cublasDestroy_v2", l.api.destroy, l) && resolve(h, "cublasGemmEx", l.api.gemm_ex, l);
    if (!l.ok) dlclose(h);
  });
  return l;
}

}  // namespace

const Api* api() {
  const Loaded& l = load();
  if (!l.ok) {
    rkv::set_error(RKV_ERR_UNSUPPORTED, "%s", l.error.c_str());
    return nullptr;
  }
  return &l.api;
}

const char* status_name(Status s) {
  switch (s) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

}  // namespace rkv_cublas
