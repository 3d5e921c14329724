// rkv_apply_token_bitmask against a plain reference: random masks (all-ones, all-zero and mixed
// words, vocabularies that end mid-word) over random rows, with and without a row index list;
// unmasked rows and allowed tokens keep their exact logits; bad arguments change nothing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "radixkv.h"
#include "rkv_test.h"

static std::mt19937 rng(5);

static void check_case(int64_t rows, int32_t vocab, bool with_indices) {
  const int32_t words = (vocab + 31) / 32 + 1;  // one spare word: bits past vocab are ignored
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  std::uniform_real_distribution<float> u(-5.f, 5.f);
  for (auto& x : logits) x = u(rng);
  std::vector<int32_t> order(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; r++) order[static_cast<size_t>(r)] = static_cast<int32_t>(r);
  std::shuffle(order.begin(), order.end(), rng);
  const int64_t masked = with_indices ? rows / 2 + 1 : rows;
  std::vector<int32_t> bits(static_cast<size_t>(masked * words));
  for (auto& w : bits) {
    const int kind = static_cast<int>(rng() % 3);
    w = kind == 0 ? -1 : kind == 1 ? 0 : static_cast<int32_t>(rng());
  }
  std::vector<float> want = logits;
  for (int64_t i = 0; i < masked; i++) {
    const int64_t r = with_indices ? order[static_cast<size_t>(i)] : i;
    for (int32_t t = 0; t < vocab; t++) {
      const uint32_t w = static_cast<uint32_t>(bits[static_cast<size_t>(i * words + t / 32)]);
      if (!((w >> (t % 32)) & 1u)) want[static_cast<size_t>(r * vocab + t)] = -INFINITY;
    }
  }
  rkv_token_bitmask_params p{logits.data(), rows, vocab, bits.data(), words,
                             with_indices ? order.data() : nullptr, masked};
  EXPECT(rkv_apply_token_bitmask(&p) == RKV_OK, "%s", rkv_last_error());
  EXPECT(std::memcmp(want.data(), logits.data(), logits.size() * sizeof(float)) == 0,
         "rows %lld vocab %d indices %d: masked logits differ from the reference", static_cast<long long>(rows), vocab,
         with_indices ? 1 : 0);
}

static void check_refusals() {
  std::vector<float> logits(64, 1.f);
  std::vector<int32_t> bits(4, 0);
  int32_t twice[2] = {1, 1};
  int32_t outside[1] = {2};
  rkv_token_bitmask_params p{logits.data(), 2, 32, bits.data(), 1, twice, 2};
  EXPECT(rkv_apply_token_bitmask(&p) == RKV_ERR_INVALID_ARGUMENT, "a row masked twice must be refused");
  p.row_indices = outside;
  p.num_masked = 1;
  EXPECT(rkv_apply_token_bitmask(&p) == RKV_ERR_INVALID_ARGUMENT, "a row index outside the rows must be refused");
  p.row_indices = nullptr;
  p.vocab = 33;
  EXPECT(rkv_apply_token_bitmask(&p) == RKV_ERR_INVALID_ARGUMENT, "one word cannot cover 33 tokens");
  EXPECT(std::strstr(rkv_last_error(), "bitmask words") != nullptr, "message: %s", rkv_last_error());
  p.vocab = 32;
  p.num_masked = 3;
  EXPECT(rkv_apply_token_bitmask(&p) == RKV_ERR_INVALID_ARGUMENT, "three masks for two rows must be refused");
  for (float x : logits) EXPECT(x == 1.f, "a refused call changed the logits");
  EXPECT(rkv_apply_token_bitmask(nullptr) == RKV_ERR_INVALID_ARGUMENT, "NULL params must be refused");
}

int main() {
  for (int32_t vocab : {1, 31, 32, 33, 100, 1000, 4099})
    for (int64_t rows : {1, 2, 7})
      for (bool idx : {false, true}) check_case(rows, vocab, idx);
  check_refusals();
  if (g_failures) std::printf("%d failures\n", g_failures);
  return g_failures ? 1 : 0;
}
