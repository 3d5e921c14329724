// The version script keeps the replaceable operator new / delete global: a program's replacement
// serves the allocations of a library linked with it and a static libstdc++ (alloc_probe), as
// alloc_failure_test needs of libradixkv. With them made local, the library called its own copies
// (GPU machines, LDFLAGS=-static-libstdc++: alloc_failure_test saw no allocation at all).
#include <cstddef>
#include <cstdlib>
#include <new>

#include "rkv_test.h"

extern "C" void* rkv_probe_new(std::size_t n);
extern "C" void rkv_probe_delete(void* p);

namespace {
int g_new = 0, g_delete = 0;
}  // namespace

void* operator new(std::size_t n) {
  g_new++;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  g_delete++;
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  g_delete++;
  std::free(p);
}

int main() {
  const int new0 = g_new, delete0 = g_delete;
  void* p = rkv_probe_new(64);
  EXPECT(g_new == new0 + 1, "the library's operator new bypassed the program's replacement (%d calls)", g_new - new0);
  rkv_probe_delete(p);
  EXPECT(g_delete == delete0 + 1, "the library's operator delete bypassed the program's replacement (%d calls)",
         g_delete - delete0);
  return g_failures == 0 ? 0 : 1;
}
