// The cuBLAS loader (native/cuda/cublas_loader.cpp) on the CPU: a missing library or symbol
// is reported cleanly with a message naming it, and a library with the four symbols is
// accepted. The loader decides once per process, so every case runs in a forked child.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cublas_loader.h"
#include "rkv_common.h"
#include "rkv_test.h"



struct Outcome {
  bool loaded;
  std::string text;  // the library loaded, or the error message
};

// Runs the loader in a child with RADIXKV_CUBLAS / CUDA_HOME set as given (nullptr: unset).
static Outcome load_in_child(const char* cublas_env, const char* cuda_home, bool call_gemm = false) {
  int fd[2];
  if (pipe(fd) != 0) std::abort();
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    if (cublas_env) setenv("RADIXKV_CUBLAS", cublas_env, 1); else unsetenv("RADIXKV_CUBLAS");
    if (cuda_home) setenv("CUDA_HOME", cuda_home, 1); else unsetenv("CUDA_HOME");
    const rkv_cublas::Api* api = rkv_cublas::api();
    std::string out;
    if (api) {
      out = std::string("1") + api->library;
      if (call_gemm) {
        void* h = nullptr;
        int c = api->create(&h);
        int g = api->gemm_ex(h, 1, 0, 7, 8, 9, nullptr, nullptr, 0, 9, nullptr, 0, 9, nullptr, nullptr, 0, 7, 68, -1);
        out += " create=" + std::to_string(c) + " gemm=" + std::to_string(g);
      }
    } else {
      out = std::string("0") + rkv::last_error();
    }
    ssize_t w = write(fd[1], out.data(), out.size());
    _exit(w == (ssize_t)out.size() ? 0 : 1);
  }
  close(fd[1]);
  std::string buf;
  char tmp[512];
  ssize_t r;
  while ((r = read(fd[0], tmp, sizeof tmp)) > 0) buf.append(tmp, (size_t)r);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || buf.empty()) return {false, "child failed"};
  return {buf[0] == '1', buf.substr(1)};
}

int main() {
  // An explicit path that does not exist: "libcublas not found", naming the path.
  Outcome missing = load_in_child("/nonexistent/libcublas.so.12", "/nonexistent");
  EXPECT(!missing.loaded, "a missing RADIXKV_CUBLAS loaded: %s", missing.text.c_str());
  EXPECT(missing.text.rfind("libcublas not found", 0) == 0, "message: %s", missing.text.c_str());
  EXPECT(missing.text.find("/nonexistent/libcublas.so.12") != std::string::npos, "message: %s", missing.text.c_str());

  // A library without the cuBLAS symbols: the first missing symbol and the file are named.
  Outcome nosym = load_in_child("libm.so.6", nullptr);
  EXPECT(!nosym.loaded, "libm.so.6 accepted as cuBLAS");
  EXPECT(nosym.text == "cuBLAS symbol cublasCreate_v2 not found in libm.so.6", "message: %s", nosym.text.c_str());

  // A library with the four symbols is accepted and its functions are the ones called.
  Outcome fake = load_in_child(RKV_FAKE_CUBLAS, nullptr, true);
  EXPECT(fake.loaded, "fake cuBLAS refused: %s", fake.text.c_str());
  EXPECT(fake.text == std::string(RKV_FAKE_CUBLAS) + " create=0 gemm=7008009", "got: %s", fake.text.c_str());

  // The default search (no override; CUDA_HOME an empty place): either the machine's cuBLAS
  // loads, or the message says it is not found and lists where it looked.
  Outcome def = load_in_child(nullptr, "/nonexistent");
  if (def.loaded) {
    EXPECT(def.text.find("libcublas") != std::string::npos, "loaded %s", def.text.c_str());
    std::printf("cuBLAS found: %s\n", def.text.c_str());
  } else {
    EXPECT(def.text.rfind("libcublas not found", 0) == 0, "message: %s", def.text.c_str());
    EXPECT(def.text.find("/nonexistent/lib64/") != std::string::npos, "message: %s", def.text.c_str());
    EXPECT(def.text.find("/usr/local/cuda/lib64/") != std::string::npos, "message: %s", def.text.c_str());
    std::printf("no cuBLAS here: %s\n", def.text.c_str());
  }

  if (g_failures) {
    std::fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("cublas_loader_test: OK\n");
  return 0;
}
