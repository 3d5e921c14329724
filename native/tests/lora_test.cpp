// rkv_lora_apply against a double-precision reference: segments of three slots and of the base
// model in one call, the delta in a column slice of a wider row, base rows and other columns
// untouched; single-threaded and multi-threaded runs give the same bits, and so does each row
// alone; bad arguments return
// RKV_ERR_INVALID_ARGUMENT with a message and write nothing.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "radixkv.h"
#include "rkv_test.h"

namespace {

std::mt19937 rng(5);

std::vector<float> uniform(size_t n) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Case {
  int32_t k = 130, n = 75;
  int64_t rows = 29, pitch = 200, offset = 60;
  std::vector<int32_t> indptr{0, 4, 5, 13, 20, 29};
  std::vector<int32_t> seg_slot{2, -1, 0, 3, 1};
  std::vector<int32_t> ranks{8, 16, 3, 0};  // slot 3 does not adapt this projection
  std::vector<std::vector<float>> a, b;
  std::vector<rkv_lora_slot> slots;
  std::vector<float> x, y0, scratch;

  Case() {
    x = uniform(static_cast<size_t>(rows * k));
    y0 = uniform(static_cast<size_t>(rows * pitch));
    scratch.resize(static_cast<size_t>(rows * 16));
    for (size_t s = 0; s < ranks.size(); s++) {
      a.push_back(uniform(static_cast<size_t>(ranks[s]) * k));
      b.push_back(uniform(static_cast<size_t>(n) * ranks[s]));
    }
    for (size_t s = 0; s < ranks.size(); s++) {
      slots.push_back({ranks[s] ? a[s].data() : nullptr, ranks[s] ? b[s].data() : nullptr, ranks[s],
                       ranks[s] ? 16.f / static_cast<float>(ranks[s]) : 0.f});
    }
  }

  rkv_lora_params params(float* y) {
    return {x.data(), y, rows, k, n, pitch, offset, static_cast<int32_t>(seg_slot.size()), indptr.data(),
            seg_slot.data(), slots.data(), static_cast<int32_t>(slots.size()), 16, scratch.data()};
  }

  int32_t slot_of(int64_t row) const {
    size_t s = 0;
    while (indptr[s + 1] <= row) s++;
    return seg_slot[s];
  }
};

void matches_the_reference_and_leaves_the_rest_alone() {
  Case c;
  std::vector<float> y = c.y0;
  rkv_lora_params p = c.params(y.data());
  EXPECT(rkv_lora_apply(&p) == RKV_OK, "%s", rkv_last_error());
  double worst = 0;
  for (int64_t row = 0; row < c.rows; row++) {
    const int32_t s = c.slot_of(row);
    const bool adapted = s >= 0 && c.ranks[s] > 0;
    for (int64_t col = 0; col < c.pitch; col++) {
      const size_t i = static_cast<size_t>(row * c.pitch + col);
      if (!adapted || col < c.offset || col >= c.offset + c.n) {
        EXPECT(std::memcmp(&y[i], &c.y0[i], 4) == 0, "row %lld column %lld touched", static_cast<long long>(row),
               static_cast<long long>(col));
        continue;
      }
      const int64_t j = col - c.offset;
      const int32_t r = c.ranks[s];
      double d = 0;
      for (int32_t q = 0; q < r; q++) {
        double t = 0;
        for (int32_t kk = 0; kk < c.k; kk++) {
          t += static_cast<double>(c.a[s][static_cast<size_t>(q * c.k + kk)]) * c.x[static_cast<size_t>(row * c.k + kk)];
        }
        d += static_cast<double>(c.b[s][static_cast<size_t>(j * r + q)]) * t;
      }
      const double want = c.y0[i] + static_cast<double>(c.slots[s].scale) * d;
      worst = std::fmax(worst, std::fabs(want - y[i]));
    }
  }
  EXPECT(worst < 1e-4, "differs from the double reference by %g", worst);
}

void threads_do_not_change_the_bits() {
  Case c;
  std::vector<float> one = c.y0, many = c.y0;
  rkv_set_num_threads(1);
  rkv_lora_params p1 = c.params(one.data());
  EXPECT(rkv_lora_apply(&p1) == RKV_OK, "%s", rkv_last_error());
  rkv_set_num_threads(0);
  rkv_lora_params pm = c.params(many.data());
  EXPECT(rkv_lora_apply(&pm) == RKV_OK, "%s", rkv_last_error());
  EXPECT(std::memcmp(one.data(), many.data(), one.size() * 4) == 0, "1 thread and %d threads differ",
         rkv_get_num_threads());
}

// Rows are grouped by slot and chunked inside the kernel: each row alone (one row, one segment)
// must still give the bits it gets in the batch.
void a_row_alone_gives_its_bits_in_the_batch() {
  Case c;
  std::vector<float> batch = c.y0;
  rkv_lora_params p = c.params(batch.data());
  EXPECT(rkv_lora_apply(&p) == RKV_OK, "%s", rkv_last_error());
  for (int64_t row = 0; row < c.rows; row++) {
    std::vector<float> y(c.y0.begin() + row * c.pitch, c.y0.begin() + (row + 1) * c.pitch);
    const int32_t indptr[2] = {0, 1};
    const int32_t slot = c.slot_of(row);
    rkv_lora_params one = c.params(y.data());
    one.x = c.x.data() + row * c.k;
    one.rows = 1;
    one.num_segments = 1;
    one.seg_indptr = indptr;
    one.seg_slot = &slot;
    EXPECT(rkv_lora_apply(&one) == RKV_OK, "%s", rkv_last_error());
    EXPECT(std::memcmp(y.data(), batch.data() + row * c.pitch, y.size() * 4) == 0,
           "row %lld alone differs from the batch", static_cast<long long>(row));
  }
}

void bad_arguments_are_refused_without_writing() {
  EXPECT(rkv_lora_apply(nullptr) == RKV_ERR_INVALID_ARGUMENT, "NULL params");
  struct Bad {
    const char* what;
    void (*spoil)(Case&, rkv_lora_params&);
  };
  const Bad bad[] = {
      {"slot out of range", [](Case& c, rkv_lora_params&) { c.seg_slot[1] = 4; }},
      {"slot below -1", [](Case& c, rkv_lora_params&) { c.seg_slot[0] = -2; }},
      {"decreasing indptr", [](Case& c, rkv_lora_params&) { c.indptr[2] = 3; }},
      {"indptr end != rows", [](Case& c, rkv_lora_params&) { c.indptr.back() = 28; }},
      {"rank over max_rank", [](Case&, rkv_lora_params& p) { p.max_rank = 8; }},
      {"columns past the row", [](Case&, rkv_lora_params& p) { p.y_offset = 126; }},
      {"NULL factors", [](Case& c, rkv_lora_params&) { c.slots[0].a = nullptr; }},
      {"NULL scratch", [](Case&, rkv_lora_params& p) { p.scratch = nullptr; }},
      {"y overlaps x", [](Case& c, rkv_lora_params& p) { p.y = c.x.data(); }},
  };
  for (const Bad& t : bad) {
    Case c;
    std::vector<float> y = c.y0;
    rkv_lora_params p = c.params(y.data());
    t.spoil(c, p);
    EXPECT(rkv_lora_apply(&p) == RKV_ERR_INVALID_ARGUMENT, "%s accepted", t.what);
    EXPECT(std::strlen(rkv_last_error()) > 0, "%s: no message", t.what);
    EXPECT(std::memcmp(y.data(), c.y0.data(), y.size() * 4) == 0, "%s: y written", t.what);
  }
}

}  // namespace

int main() {
  matches_the_reference_and_leaves_the_rest_alone();
  threads_do_not_change_the_bits();
  a_row_alone_gives_its_bits_in_the_batch();
  bad_arguments_are_refused_without_writing();
  std::printf("lora_test: %d failures\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
