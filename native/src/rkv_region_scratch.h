// Per-thread scratch built inside an OpenMP parallel region (so each thread first-touches its
// own). An exception that leaves a region's block terminates the process, so a failed
// allocation there must become an error code after the region instead: each thread builds its
// scratch in a try, and after a barrier every thread knows whether all of them succeeded.
#pragma once

#include <atomic>
#include <new>
#include <optional>
#include <utility>

namespace rkv {

class RegionScratch {
 public:
  // Constructs slot on the calling thread. Every thread of the region must call it (it holds a
  // barrier); each gets the same answer: true when every thread's scratch was built. On false,
  // every thread must skip the region's worksharing constructs.
  template <typename T, typename... Args>
  bool build(std::optional<T>& slot, Args&&... args) {
    return run([&] { slot.emplace(std::forward<Args>(args)...); });
  }

  // The same for scratch that make() finds or builds itself (it may throw std::bad_alloc), such as
  // a thread's scratch kept between calls.
  template <typename F>
  bool run(F&& make) {
    try {
      make();
    } catch (const std::bad_alloc&) {
      failed_.store(true);
    }
#pragma omp barrier
    return !failed_.load();
  }

  // After the region: whether any thread's build failed.
  bool failed() const { return failed_.load(); }

 private:
  std::atomic<bool> failed_{false};
};

}  // namespace rkv
