// A shared library linked as libradixkv is (native/exports.map) but with libstdc++ static, as the
// GPU machines' builds link it: its allocations must still go through a program's replacement of
// operator new / delete (operator_new_interpose_test).
#include <cstddef>
#include <new>

extern "C" __attribute__((visibility("default"))) void* rkv_probe_new(std::size_t n) { return ::operator new(n); }
extern "C" __attribute__((visibility("default"))) void rkv_probe_delete(void* p) { ::operator delete(p); }
