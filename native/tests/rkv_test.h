// The native tests' one check macro: a failed EXPECT prints where, the condition and a
// printf-style message, and counts the failure; each test's main reports g_failures at the end.
#pragma once

#include <cstdio>

inline int g_failures = 0;

#define EXPECT(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      std::printf(__VA_ARGS__);                                            \
      std::printf("\n");                                                   \
      g_failures++;                                                        \
    }                                                                      \
  } while (0)
