// rkv_ab: A/B of several builds of libradixkv in one process, for kernel changes whose effect is
// smaller than the spread between runs. Each library is dlopen'ed (give each build its own file:
// one path opened twice is one library), and every round runs each kernel once per library, the
// starting library rotating from round to round (the first of a round can run measurably faster,
// whichever it is), each measurement followed by a bandwidth baseline of libradixkv_bench
// (rkv_bench_read or rkv_bench_copy, linked, on the same threads) over a separate buffer, so that
// every ratio comes from the same seconds. Prints the median and range over the rounds.
//
//   rkv_ab gemv    [dtype=bf16|f32|f16] [m=8] [n=8192] [k=3072] [layout=packed|rows] COMMON LIB...
//   rkv_ab decode  [kv=bf16|f32|f16|e4m3|e5m2] [ctx=32768] [batch=4] [pages=order|shuffled] COMMON LIB...
//   rkv_ab scatter [scale=1] [tokens=262144] COMMON LIB...      (bf16 -> e4m3 scatter, f32 -> e4m3 quantize)
//   rkv_ab prefill [kv=bf16] [q=512] COMMON LIB...              (of rkv_bench_fma_peak)
//   rkv_ab lora    [slots=8] [rows=32] [rank=16] [layers=12] [hidden=768] [q=768] [kv=256] [inter=2048] COMMON LIB...
//                  (one decode step's rkv_lora_apply calls: 7 projections a layer, row i uses slot
//                  i % slots, every layer and slot its own factors; of the read bandwidth)
//   rkv_ab quant   [fmt=q4_k|q4_0|q5_0|q8_0|q6_k] [m=1] [model=small] [n=.. k=..] COMMON LIB...
//                  (rkv_quant_linear over random blocks: model=small runs the small preset's
//                  matrices in a token's order, 12 times 1280x768 qkv, 768x768 o, 4096x768
//                  gate+up, 768x2048 down, then the 32000x768 LM head; n= and k= one matrix; either
//                  in copies of rotate=256 MiB, so that every call streams its weights from memory)
//   LIB: a path with a '/' in it (./libradixkv.so); an argument with '=' and no '/' is an option.
//   gemv packs the weights with the first library (every build packs alike).
//   COMMON: [threads=1] [rounds=5] [base=1024] (MiB of the baseline buffer) [rotate=1200] (gemv:
//           MiB read between two uses of one weight copy: at least twice the last-level cache)
// Shapes: KV 8 heads of 128, GQA 4 (32 query heads), 16-token pages, as the JMH benchmarks;
// decode and prefill also take [kv_heads=8] [gqa=4] [head_dim=128].
// Memory is allocated in 2 MiB-aligned blocks with MADV_HUGEPAGE, as the engine's pools.
#include <dlfcn.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "radixkv.h"
#include "radixkv_bench.h"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds of the calling thread.
double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Buffer {
  uint8_t* p = nullptr;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) {
    const size_t huge = size_t{2} << 20, rounded = (n + huge - 1) / huge * huge;
    p = static_cast<uint8_t*>(std::aligned_alloc(huge, rounded));
    if (p == nullptr) {
      std::fprintf(stderr, "rkv_ab: cannot allocate %zu bytes\n", n);
      std::exit(2);
    }
    madvise(p, rounded, MADV_HUGEPAGE);
    std::memset(p, 0, rounded);  // every page faulted in before any timing
  }
  ~Buffer() { std::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(p);
  }
};

// The entry points this tool calls (member, symbol), typed from the header.
#define RKV_AB_ENTRY_POINTS(X)                                                                   \
  X(last_error, rkv_last_error) X(build_info, rkv_build_info) X(set_threads, rkv_set_num_threads) \
  X(linear, rkv_linear) X(pack, rkv_linear_pack) X(linear_packed, rkv_linear_packed)            \
  X(decode, rkv_decode_attention) X(prefill, rkv_append_prefill_attention)                       \
  X(scatter, rkv_reshape_and_cache) X(quantize, rkv_fp8_quantize) X(lora, rkv_lora_apply)       \
  X(quant_linear, rkv_quant_linear) X(row_bytes, rkv_quant_row_bytes)

struct Lib {
  std::string path;
#define RKV_AB_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  RKV_AB_ENTRY_POINTS(RKV_AB_MEMBER)
#undef RKV_AB_MEMBER

  void check(int status, const char* what) const {
    if (status != 0) {
      std::fprintf(stderr, "rkv_ab: %s failed in %s: %s\n", what, path.c_str(), last_error());
      std::exit(1);
    }
  }
  // A yardstick of libradixkv_bench (the same for every library).
  static void check_bench(int status, const char* what) {
    if (status != 0) {
      std::fprintf(stderr, "rkv_ab: %s failed: %s\n", what, rkv_bench_last_error());
      std::exit(1);
    }
  }
};

template <typename F>
void bind(void* h, const char* name, F& f, const std::string& path) {
  f = reinterpret_cast<F>(dlsym(h, name));
  if (f == nullptr) {
    std::fprintf(stderr, "rkv_ab: %s has no %s\n", path.c_str(), name);
    std::exit(2);
  }
}

Lib open_lib(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "rkv_ab: %s\n", dlerror());
    std::exit(2);
  }
  Lib l;
  l.path = path;
#define RKV_AB_BIND(member, symbol) bind(h, #symbol, l.member, path);
  RKV_AB_ENTRY_POINTS(RKV_AB_BIND)
#undef RKV_AB_BIND
  return l;
}

// key=value options; a value not given takes its default, an unknown key is an error.
struct Options {
  std::map<std::string, std::string> kv;
  std::vector<std::string> libs;
  std::vector<std::string> known;

  std::string str(const std::string& key, const std::string& def) {
    known.push_back(key);
    auto it = kv.find(key);
    return it == kv.end() ? def : it->second;
  }
  int64_t num(const std::string& key, int64_t def) {
    const std::string s = str(key, std::to_string(def));
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || v <= 0) {
      std::fprintf(stderr, "rkv_ab: %s=%s is not a positive integer\n", key.c_str(), s.c_str());
      std::exit(2);
    }
    return v;
  }
  double real(const std::string& key, double def) {
    const std::string s = str(key, std::to_string(def));
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || !(v > 0)) {
      std::fprintf(stderr, "rkv_ab: %s=%s is not a positive number\n", key.c_str(), s.c_str());
      std::exit(2);
    }
    return v;
  }
  void finish() const {
    for (const auto& [k, v] : kv)
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        std::fprintf(stderr, "rkv_ab: unknown option %s=%s\n", k.c_str(), v.c_str());
        std::exit(2);
      }
    if (libs.empty()) {
      std::fprintf(stderr, "rkv_ab: no library given\n");
      std::exit(2);
    }
  }
};

int32_t dtype_of(const std::string& s) {
  if (s == "f32") return RKV_DTYPE_F32;
  if (s == "f16") return RKV_DTYPE_F16;
  if (s == "bf16") return RKV_DTYPE_BF16;
  if (s == "e4m3") return RKV_DTYPE_FP8_E4M3;
  if (s == "e5m2") return RKV_DTYPE_FP8_E5M2;
  std::fprintf(stderr, "rkv_ab: unknown dtype %s (f32, f16, bf16, e4m3, e5m2)\n", s.c_str());
  std::exit(2);
}

int64_t dtype_bytes(int32_t dt) {
  return dt == RKV_DTYPE_F32 ? 4 : dt == RKV_DTYPE_FP8_E4M3 || dt == RKV_DTYPE_FP8_E5M2 ? 1 : 2;
}

// Random values of roughly unit magnitude in a dtype (normal numbers, both signs).
void fill_random(uint8_t* p, int64_t n, int32_t dt, std::mt19937_64& g) {
  for (int64_t i = 0; i < n; i++) {
    const uint64_t r = g();
    const uint32_t sign = r & 1, mant = static_cast<uint32_t>(r >> 8);
    const uint32_t e = static_cast<uint32_t>((r >> 1) % 8);  // 2^-7 .. 2^0
    switch (dt) {
      case RKV_DTYPE_F32: {
        const uint32_t u = (sign << 31) | ((120 + e) << 23) | (mant & 0x7FFFFF);
        std::memcpy(p + 4 * i, &u, 4);
        break;
      }
      case RKV_DTYPE_BF16: {
        const uint16_t u = static_cast<uint16_t>((sign << 15) | ((120 + e) << 7) | (mant & 0x7F));
        std::memcpy(p + 2 * i, &u, 2);
        break;
      }
      case RKV_DTYPE_F16: {
        const uint16_t u = static_cast<uint16_t>((sign << 15) | ((8 + e) << 10) | (mant & 0x3FF));
        std::memcpy(p + 2 * i, &u, 2);
        break;
      }
      case RKV_DTYPE_FP8_E5M2:  // exponent field 8-15 (2^-7 .. 2^0)
        p[i] = static_cast<uint8_t>((sign << 7) | ((8 + e) << 2) | (mant & 3));
        break;
      default:  // e4m3: exponent field 1-8, never the NaN code
        p[i] = static_cast<uint8_t>((sign << 7) | ((1 + e) << 3) | (mant & 7));
    }
  }
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// Per library and named figure, the values of every round.
using Figures = std::vector<std::map<std::string, std::vector<double>>>;

void run_rounds(std::vector<Lib>& libs, int64_t rounds, int64_t threads,
                const std::function<void(Lib&, std::map<std::string, std::vector<double>>&)>& round,
                Figures& figs) {
  figs.assign(libs.size(), {});
  for (int64_t r = 0; r < rounds; r++)
    for (size_t i = 0; i < libs.size(); i++) {
      const size_t L = (i + static_cast<size_t>(r)) % libs.size();
      libs[L].set_threads(static_cast<int32_t>(threads));
      round(libs[L], figs[L]);
    }
}

void print(const std::vector<Lib>& libs, const Figures& figs) {
  for (size_t L = 0; L < libs.size(); L++) {
    std::printf("%s\n", libs[L].path.c_str());
    for (const auto& [name, values] : figs[L]) {
      std::vector<double> v = values;
      std::sort(v.begin(), v.end());
      std::printf("  %-34s median %8.3f  [%.3f .. %.3f]\n", name.c_str(), v[v.size() / 2], v.front(), v.back());
    }
  }
}

// Seconds of the fastest of `reps` calls of f.
template <typename F>
double fastest(int reps, F&& f) {
  double best = 1e300;
  for (int i = 0; i < reps; i++) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

double read_gbps(const Buffer& b) {
  double sink = 0;
  return static_cast<double>(b.bytes) / fastest(2, [&] {
           Lib::check_bench(rkv_bench_read(b.p, static_cast<int64_t>(b.bytes), &sink), "rkv_bench_read");
         }) / 1e9;
}

// A kernel's GB/s, then the read bandwidth right after it, and their ratio.
void record_against_read(const Buffer& rb, const char* name, double gbps,
                         std::map<std::string, std::vector<double>>& f) {
  const double rd = read_gbps(rb);
  f[name].push_back(gbps);
  f["read GB/s"].push_back(rd);
  f["of read"].push_back(gbps / rd);
}

// Copy bandwidth, bytes read + written.
double copy_gbps(const Buffer& src, const Buffer& dst) {
  const int64_t bytes = static_cast<int64_t>(src.bytes);
  return 2.0 * static_cast<double>(bytes) /
         fastest(2, [&] { Lib::check_bench(rkv_bench_copy(dst.p, src.p, bytes), "rkv_bench_copy"); }) / 1e9;
}

int gemv(Options& o, std::vector<Lib>& libs) {
  const int32_t dt = dtype_of(o.str("dtype", "bf16"));
  const int64_t m = o.num("m", 8), n = o.num("n", 8192), k = o.num("k", 3072);
  const bool packed = o.str("layout", "packed") == "packed";
  const int64_t threads = o.num("threads", 1), rounds = o.num("rounds", 5);
  const size_t base = static_cast<size_t>(o.num("base", 1024)) << 20;
  const size_t rotate = static_cast<size_t>(o.num("rotate", 1200)) << 20;
  o.finish();
  if (dt == RKV_DTYPE_FP8_E4M3 || dt == RKV_DTYPE_FP8_E5M2) {
    std::fprintf(stderr, "rkv_ab: gemv weights are f32, f16 or bf16\n");
    return 2;
  }
  const size_t wb = static_cast<size_t>(n * k * dtype_bytes(dt));
  const size_t copies = (rotate + wb - 1) / wb + 1;
  std::mt19937_64 g(1);
  std::vector<std::unique_ptr<Buffer>> ws;
  for (size_t c = 0; c < copies; c++) {
    ws.push_back(std::make_unique<Buffer>(wb));
    fill_random(ws.back()->p, n * k, dt, g);
    if (packed) libs[0].check(libs[0].pack(ws.back()->p, dt, n, k), "rkv_linear_pack");
  }
  Buffer x(static_cast<size_t>(4 * m * k)), y(static_cast<size_t>(4 * m * n)), rb(base);
  fill_random(x.p, m * k, RKV_DTYPE_F32, g);
  std::printf("gemv %s %s m %lld, %lld x %lld, %lld thread(s): %zu copies of %zu MiB rotated\n",
              packed ? "packed" : "row-major", dt == RKV_DTYPE_F32 ? "f32" : dt == RKV_DTYPE_F16 ? "f16" : "bf16",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              static_cast<long long>(threads), copies, wb >> 20);
  Figures figs;
  run_rounds(libs, rounds, threads, [&](Lib& l, auto& f) {
    auto all = [&] {
      for (auto& w : ws)
        l.check((packed ? l.linear_packed : l.linear)(x.as<float>(), w->p, dt, y.as<float>(), m, n, k, 0),
                packed ? "rkv_linear_packed" : "rkv_linear");
    };
    all();  // warm: the thread pool, the call's scratch
    const double t0 = now();
    all();
    record_against_read(rb, "weights GB/s", static_cast<double>(wb * copies) / (now() - t0) / 1e9, f);
  }, figs);
  print(libs, figs);
  return 0;
}

int32_t quant_format_of(const std::string& s) {
  if (s == "q8_0") return RKV_QUANT_Q8_0;
  if (s == "q4_0") return RKV_QUANT_Q4_0;
  if (s == "q5_0") return RKV_QUANT_Q5_0;
  if (s == "q4_k") return RKV_QUANT_Q4_K;
  if (s == "q6_k") return RKV_QUANT_Q6_K;
  std::fprintf(stderr, "rkv_ab: unknown quantized format %s (q8_0, q4_0, q5_0, q4_k, q6_k)\n", s.c_str());
  std::exit(2);
}

// Random block bytes of n rows of k values, with each block's f16 scales (and Q4_K's dmin) set
// to values of real models' range (1e-3 .. 2e-2), so that no scale is an infinity or NaN.
void fill_quant(const Lib& l, uint8_t* p, int32_t fmt, int64_t n, int64_t k, std::mt19937_64& g) {
  const int64_t bytes = n * l.row_bytes(fmt, k);
  for (int64_t i = 0; i < bytes; i++) p[i] = static_cast<uint8_t>(g() & 0xFF);
  const int64_t bv = fmt == RKV_QUANT_Q4_K || fmt == RKV_QUANT_Q6_K ? 256 : 32;
  const int64_t bb = l.row_bytes(fmt, bv);
  const int64_t scale_at = fmt == RKV_QUANT_Q6_K ? 208 : 0;
  for (int64_t at = 0; at < bytes; at += bb)
    for (int s = 0; s < (fmt == RKV_QUANT_Q4_K ? 2 : 1); s++) {
      const uint16_t h = static_cast<uint16_t>(0x1400 + g() % 0x0A00);  // f16 1.2e-3 .. 1.9e-2
      std::memcpy(p + at + scale_at + 2 * s, &h, 2);
    }
}

int quant(Options& o, std::vector<Lib>& libs) {
  const std::string fname = o.str("fmt", "q4_k");
  const int32_t fmt = quant_format_of(fname);
  const int64_t m = o.num("m", 1);
  const std::string model = o.str("model", "small");
  const int64_t threads = o.num("threads", 1), rounds = o.num("rounds", 5);
  const size_t base = static_cast<size_t>(o.num("base", 1024)) << 20;
  const size_t rotate = static_cast<size_t>(o.num("rotate", 256)) << 20;
  struct Shape { int64_t n, k; };
  std::vector<Shape> shapes;
  if (o.kv.count("n") || o.kv.count("k")) {
    shapes.push_back({o.num("n", 4096), o.num("k", 768)});
  } else if (model == "small") {
    for (int l = 0; l < 12; l++)
      for (const Shape s : {Shape{1280, 768}, Shape{768, 768}, Shape{4096, 768}, Shape{768, 2048}}) shapes.push_back(s);
    shapes.push_back({32000, 768});  // the LM head
  } else {
    std::fprintf(stderr, "rkv_ab: model=%s: only small (or n= and k=)\n", model.c_str());
    return 2;
  }
  o.finish();
  // copies of the matrices until they hold `rotate` MiB: every call streams its weights from memory
  int64_t set_bytes = 0;
  for (const Shape& s : shapes) set_bytes += s.n * std::max<int64_t>(0, libs[0].row_bytes(fmt, s.k));
  const size_t set_size = shapes.size();
  for (int64_t c = 1; set_bytes > 0 && c * set_bytes < static_cast<int64_t>(rotate); c++)
    for (size_t i = 0; i < set_size; i++) shapes.push_back(shapes[i]);
  std::mt19937_64 g(3);
  std::vector<std::unique_ptr<Buffer>> ws;
  int64_t total = 0, kmax = 0, nmax = 0;
  for (const Shape& s : shapes) {
    if (libs[0].row_bytes(fmt, s.k) < 0) {
      std::fprintf(stderr, "rkv_ab: k=%lld is no whole number of %s blocks\n", static_cast<long long>(s.k), fname.c_str());
      return 2;
    }
    const int64_t bytes = s.n * libs[0].row_bytes(fmt, s.k);
    ws.push_back(std::make_unique<Buffer>(static_cast<size_t>(bytes)));
    fill_quant(libs[0], ws.back()->p, fmt, s.n, s.k, g);
    total += bytes;
    kmax = std::max(kmax, s.k);
    nmax = std::max(nmax, s.n);
  }
  Buffer x(static_cast<size_t>(4 * m * kmax)), y(static_cast<size_t>(4 * m * nmax)), rb(base);
  fill_random(x.p, m * kmax, RKV_DTYPE_F32, g);
  std::printf("quant %s m %lld, %zu matrices, %.1f MiB of blocks, %lld thread(s)\n", fname.c_str(),
              static_cast<long long>(m), shapes.size(), static_cast<double>(total) / (1 << 20),
              static_cast<long long>(threads));
  Figures figs;
  run_rounds(libs, rounds, threads, [&](Lib& l, auto& f) {
    auto all = [&] {
      for (size_t i = 0; i < shapes.size(); i++) {
        rkv_quant_linear_params p{x.as<float>(), shapes[i].k, ws[i]->p, fmt, y.as<float>(), shapes[i].n,
                                  m, shapes[i].n, shapes[i].k, 0};
        l.check(l.quant_linear(&p), "rkv_quant_linear");
      }
    };
    all();  // warm: the thread pool, the call's scratch
    const double t = fastest(3, all);
    record_against_read(rb, "weights GB/s", static_cast<double>(total) / t / 1e9, f);
  }, figs);
  print(libs, figs);
  return 0;
}

// One batch of sequences of ctx tokens over a pool of exactly their pages.
struct Pages {
  std::vector<int32_t> indptr{0}, indices, last;
  int64_t count = 0;
  Pages(int64_t batch, int64_t ctx, int64_t page, bool shuffled) {
    const int64_t per_seq = (ctx + page - 1) / page;
    count = batch * per_seq;
    for (int64_t b = 0; b < batch; b++) {
      for (int64_t p = 0; p < per_seq; p++) indices.push_back(static_cast<int32_t>(b * per_seq + p));
      indptr.push_back(static_cast<int32_t>(indices.size()));
      last.push_back(static_cast<int32_t>(ctx - (per_seq - 1) * page));
    }
    if (shuffled) std::shuffle(indices.begin(), indices.end(), std::mt19937_64(5));
  }
};

constexpr int32_t kKvHeads = 8, kHeadDim = 128, kPage = 16;

// The attention kinds' head layout: kv_heads=8 gqa=4 head_dim=128 unless given.
struct AttnShape {
  int32_t kv_heads, gqa, head_dim;
  float sm_scale() const { return 1.f / std::sqrt(static_cast<float>(head_dim)); }
};
AttnShape attn_shape(Options& o) {
  return {static_cast<int32_t>(o.num("kv_heads", kKvHeads)), static_cast<int32_t>(o.num("gqa", 4)),
          static_cast<int32_t>(o.num("head_dim", kHeadDim))};
}

// f32 q and out, no LSE, no soft cap, no window.
rkv_attention_args attn_args(const Buffer& q, const Buffer& out, int32_t qo_heads, const AttnShape& sh) {
  rkv_attention_args a{};
  a.q = q.p;
  a.out = out.p;
  a.q_dtype = RKV_DTYPE_F32;
  a.out_dtype = RKV_DTYPE_F32;
  a.num_qo_heads = qo_heads;
  a.sm_scale = sh.sm_scale();
  a.window_left = -1;
  return a;
}

rkv_paged_kv paged_kv(const Buffer& k, const Buffer& v, int32_t dtype, const Pages& pg, const AttnShape& sh,
                      int32_t batch) {
  rkv_paged_kv kv{};
  kv.k_cache = k.p;
  kv.v_cache = v.p;
  kv.cache_dtype = dtype;
  kv.page_size = kPage;
  kv.num_pages = pg.count;
  kv.num_kv_heads = sh.kv_heads;
  kv.head_dim = sh.head_dim;
  kv.kv_indptr = pg.indptr.data();
  kv.kv_indices = pg.indices.data();
  kv.kv_last_page_len = pg.last.data();
  kv.batch_size = batch;
  kv.k_scale = 1.f;
  kv.v_scale = 1.f;
  return kv;
}

int decode(Options& o, std::vector<Lib>& libs) {
  const int32_t dt = dtype_of(o.str("kv", "bf16"));
  const int64_t ctx = o.num("ctx", 32768), batch = o.num("batch", 4);
  const bool shuffled = o.str("pages", "order") == "shuffled";
  const int64_t threads = o.num("threads", 1), rounds = o.num("rounds", 5);
  const size_t base = static_cast<size_t>(o.num("base", 1024)) << 20;
  const AttnShape sh = attn_shape(o);
  o.finish();
  const int32_t qo = sh.kv_heads * sh.gqa;
  Pages pg(batch, ctx, kPage, shuffled);
  const size_t pool = static_cast<size_t>(pg.count * kPage * sh.kv_heads * sh.head_dim * dtype_bytes(dt));
  Buffer k(pool), v(pool), q(static_cast<size_t>(4 * batch * qo * sh.head_dim)), out(q.bytes), rb(base);
  std::mt19937_64 g(2);
  fill_random(k.p, static_cast<int64_t>(pool) / dtype_bytes(dt), dt, g);
  fill_random(v.p, static_cast<int64_t>(pool) / dtype_bytes(dt), dt, g);
  fill_random(q.p, batch * qo * sh.head_dim, RKV_DTYPE_F32, g);
  const double kv_bytes = 2.0 * static_cast<double>(batch * ctx * sh.kv_heads * sh.head_dim * dtype_bytes(dt));
  const int calls = static_cast<int>(std::max(3.0, 2e9 / kv_bytes));
  std::printf("decode %s KV (%d heads of %d, GQA %d), batch %lld x %lld tokens, pages %s, %lld thread(s), %.0f MiB of K/V\n",
              o.kv.count("kv") ? o.kv["kv"].c_str() : "bf16", sh.kv_heads, sh.head_dim, sh.gqa, static_cast<long long>(batch),
              static_cast<long long>(ctx), shuffled ? "shuffled" : "in order", static_cast<long long>(threads),
              kv_bytes / (1 << 20));
  Figures figs;
  run_rounds(libs, rounds, threads, [&](Lib& l, auto& f) {
    rkv_decode_params p{};
    p.attn = attn_args(q, out, qo, sh);
    p.kv = paged_kv(k, v, dt, pg, sh, static_cast<int32_t>(batch));
    auto call = [&] { l.check(l.decode(&p), "rkv_decode_attention"); };
    call();
    const double t0 = now();
    for (int i = 0; i < calls; i++) call();
    record_against_read(rb, "K/V GB/s", kv_bytes * calls / (now() - t0) / 1e9, f);
  }, figs);
  print(libs, figs);
  return 0;
}

int scatter(Options& o, std::vector<Lib>& libs) {
  const double scale = o.real("scale", 1.0);
  const int64_t tokens = o.num("tokens", 262144);
  const int64_t threads = o.num("threads", 1), rounds = o.num("rounds", 5);
  const size_t base = static_cast<size_t>(o.num("base", 1024)) << 20;
  o.finish();
  const int64_t row = kKvHeads * kHeadDim, pages = (tokens + kPage - 1) / kPage;
  Buffer k(static_cast<size_t>(2 * tokens * row)), v(k.bytes), kc(static_cast<size_t>(pages * kPage * row)),
      vc(kc.bytes), src(static_cast<size_t>(4 * tokens * row)), q8(static_cast<size_t>(tokens * row)), cs(base / 2),
      cd(base / 2);
  std::mt19937_64 g(3);
  fill_random(k.p, tokens * row, RKV_DTYPE_BF16, g);
  fill_random(v.p, tokens * row, RKV_DTYPE_BF16, g);
  fill_random(src.p, tokens * row, RKV_DTYPE_F32, g);
  std::vector<int64_t> perm(static_cast<size_t>(pages)), slots(static_cast<size_t>(tokens));
  for (int64_t p = 0; p < pages; p++) perm[static_cast<size_t>(p)] = p;
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(1));
  for (int64_t t = 0; t < tokens; t++) slots[static_cast<size_t>(t)] = perm[static_cast<size_t>(t / kPage)] * kPage + t % kPage;
  const float s = static_cast<float>(scale);
  std::printf("scatter bf16 -> e4m3 (pages shuffled) and quantize f32 -> e4m3, scale %g, %lld tokens of %lld, "
              "%lld thread(s)\n", scale, static_cast<long long>(tokens), static_cast<long long>(row),
              static_cast<long long>(threads));
  Figures figs;
  run_rounds(libs, rounds, threads, [&](Lib& l, auto& f) {
    const double sc = fastest(3, [&] {
      l.check(l.scatter(k.p, v.p, RKV_DTYPE_BF16, slots.data(), tokens, kKvHeads, kHeadDim, kc.p, vc.p,
                        RKV_DTYPE_FP8_E4M3, pages, kPage, s, s),
              "rkv_reshape_and_cache");
    });
    const double qz = fastest(3, [&] {
      l.check(l.quantize(src.as<float>(), q8.p, tokens * row, RKV_DTYPE_FP8_E4M3, s), "rkv_fp8_quantize");
    });
    const double cp = copy_gbps(cs, cd);
    const double sc_gbps = 2.0 * 3.0 * static_cast<double>(tokens * row) / sc / 1e9;  // bf16 in, e4m3 out, K and V
    const double qz_gbps = 5.0 * static_cast<double>(tokens * row) / qz / 1e9;
    f["copy GB/s"].push_back(cp);
    f["scatter, of copy"].push_back(sc_gbps / cp);
    f["quantize, of copy"].push_back(qz_gbps / cp);
  }, figs);
  print(libs, figs);
  return 0;
}

int prefill(Options& o, std::vector<Lib>& libs) {
  const int32_t dt = dtype_of(o.str("kv", "bf16"));
  const int64_t ql = o.num("q", 512);
  const int64_t threads = o.num("threads", 1), rounds = o.num("rounds", 5);
  const AttnShape sh = attn_shape(o);
  o.finish();
  const int32_t qo = sh.kv_heads * sh.gqa;
  Pages pg(1, ql, kPage, true);
  const size_t pool = static_cast<size_t>(pg.count * kPage * sh.kv_heads * sh.head_dim * dtype_bytes(dt));
  Buffer k(pool), v(pool), q(static_cast<size_t>(4 * ql * qo * sh.head_dim)), out(q.bytes);
  std::mt19937_64 g(4);
  fill_random(k.p, static_cast<int64_t>(pool) / dtype_bytes(dt), dt, g);
  fill_random(v.p, static_cast<int64_t>(pool) / dtype_bytes(dt), dt, g);
  fill_random(q.p, ql * qo * sh.head_dim, RKV_DTYPE_F32, g);
  const int32_t qo_indptr[2] = {0, static_cast<int32_t>(ql)};
  const double flop = 4.0 * sh.head_dim * qo * (static_cast<double>(ql) * (ql + 1) / 2);
  std::printf("append prefill, %s KV (%d heads of %d, GQA %d), %lld new tokens, no prefix, %lld thread(s)\n",
              o.kv.count("kv") ? o.kv["kv"].c_str() : "bf16", sh.kv_heads, sh.head_dim, sh.gqa, static_cast<long long>(ql),
              static_cast<long long>(threads));
  Figures figs;
  run_rounds(libs, rounds, threads, [&](Lib& l, auto& f) {
    rkv_prefill_params p{};
    p.attn = attn_args(q, out, qo, sh);
    p.kv = paged_kv(k, v, dt, pg, sh, 1);
    p.qo_indptr = qo_indptr;
    auto call = [&] { l.check(l.prefill(&p), "rkv_append_prefill_attention"); };
    call();
    int calls = 0;
    const double t0 = now();
    do {
      call();
      calls++;
    } while (now() - t0 < 0.5);
    const double gflops = flop * calls / (now() - t0) / 1e9;
    double peak = 0;
    Lib::check_bench(rkv_bench_fma_peak(0.3, &peak), "rkv_bench_fma_peak");
    f["GFLOP/s"].push_back(gflops);
    f["FMA peak GFLOP/s"].push_back(peak);
    f["of FMA peak"].push_back(gflops / peak);
  }, figs);
  print(libs, figs);
  return 0;
}

// One decode step of multi-LoRA: for each layer, q/k/v/o/gate/up/down with every slot's factors of
// that layer; the rows run round-robin over the slots, one segment per row (as requests of
// different adapters interleave in a batch). The step's factors are read once from memory at best:
// "factor GB/s" is their bytes over the step's time, "of read" against the read bandwidth after it.
int lora(Options& o, std::vector<Lib>& libs) {
  const int64_t slots = o.num("slots", 8), rows = o.num("rows", 32), rank = o.num("rank", 16);
  const int64_t layers = o.num("layers", 12), hidden = o.num("hidden", 768), qd = o.num("q", 768);
  const int64_t kvd = o.num("kv", 256), inter = o.num("inter", 2048);
  const int64_t threads = o.num("threads", 1), rounds = o.num("rounds", 5);
  const size_t base = static_cast<size_t>(o.num("base", 1024)) << 20;
  o.finish();
  struct Proj {
    int64_t k, n;
  };
  const Proj projs[] = {{hidden, qd}, {hidden, kvd}, {hidden, kvd}, {qd, hidden},
                        {hidden, inter}, {hidden, inter}, {inter, hidden}};
  int64_t per_slot_layer = 0, widest = 0;
  for (const Proj& pr : projs) {
    per_slot_layer += rank * (pr.k + pr.n);
    widest = std::max({widest, pr.k, pr.n});
  }
  const int64_t floats = per_slot_layer * slots * layers;
  Buffer factors(static_cast<size_t>(4 * floats)), x(static_cast<size_t>(4 * rows * widest)),
      y(static_cast<size_t>(4 * rows * widest)), scratch(static_cast<size_t>(4 * rows * rank)), rb(base);
  std::mt19937_64 g(6);
  fill_random(factors.p, floats, RKV_DTYPE_F32, g);
  fill_random(x.p, rows * widest, RKV_DTYPE_F32, g);
  std::vector<int32_t> indptr, seg_slot;
  for (int64_t r = 0; r <= rows; r++) indptr.push_back(static_cast<int32_t>(r));
  for (int64_t r = 0; r < rows; r++) seg_slot.push_back(static_cast<int32_t>(r % slots));
  // calls[layer * 7 + proj]: the slot table of that projection
  std::vector<std::vector<rkv_lora_slot>> tables;
  const float* f = factors.as<float>();
  for (int64_t l = 0; l < layers; l++)
    for (const Proj& pr : projs) {
      std::vector<rkv_lora_slot> t;
      for (int64_t s = 0; s < slots; s++) {
        t.push_back({f, f + rank * pr.k, static_cast<int32_t>(rank), 0.5f});
        f += rank * (pr.k + pr.n);
      }
      tables.push_back(std::move(t));
    }
  std::printf("lora: %lld rows over %lld slot(s), rank %lld, %lld layers (hidden %lld, q %lld, kv %lld, MLP %lld), "
              "%.1f MiB of factors a step, %lld thread(s)\n", static_cast<long long>(rows),
              static_cast<long long>(slots), static_cast<long long>(rank), static_cast<long long>(layers),
              static_cast<long long>(hidden), static_cast<long long>(qd), static_cast<long long>(kvd),
              static_cast<long long>(inter), 4.0 * static_cast<double>(floats) / (1 << 20),
              static_cast<long long>(threads));
  Figures figs;
  run_rounds(libs, rounds, threads, [&](Lib& l, auto& fg) {
    auto step = [&] {
      for (int64_t c = 0; c < static_cast<int64_t>(tables.size()); c++) {
        const Proj& pr = projs[c % 7];
        rkv_lora_params p{};
        p.x = x.as<float>();
        p.y = y.as<float>();
        p.rows = rows;
        p.k = static_cast<int32_t>(pr.k);
        p.n = static_cast<int32_t>(pr.n);
        p.y_pitch = pr.n;
        p.num_segments = static_cast<int32_t>(rows);
        p.seg_indptr = indptr.data();
        p.seg_slot = seg_slot.data();
        p.slots = tables[static_cast<size_t>(c)].data();
        p.num_slots = static_cast<int32_t>(slots);
        p.max_rank = static_cast<int32_t>(rank);
        p.scratch = scratch.as<float>();
        l.check(l.lora(&p), "rkv_lora_apply");
      }
    };
    step();  // warm: the thread pool
    double best = 1e300, best_cpu = 1e300;
    for (int i = 0; i < 3; i++) {
      double sink = 0;
      Lib::check_bench(rkv_bench_read(rb.p, static_cast<int64_t>(rb.bytes), &sink), "rkv_bench_read");  // evicts
      const double c0 = thread_cpu(), t0 = now();
      step();
      best = std::min(best, now() - t0);
      best_cpu = std::min(best_cpu, thread_cpu() - c0);
    }
    fg["step ms"].push_back(best * 1e3);
    // with threads=1 the calling thread does all the work: its CPU time leaves out other processes' turns
    if (threads == 1) fg["step ms, CPU time"].push_back(best_cpu * 1e3);
    record_against_read(rb, "factor GB/s", 4.0 * static_cast<double>(floats) / best / 1e9, fg);
  }, figs);
  print(libs, figs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rkv_ab gemv|decode|scatter|prefill|lora|quant [key=value ...] LIB... (see the source's header)\n");
    return 2;
  }
  Options o;
  for (int i = 2; i < argc; i++) {
    const char* eq = std::strchr(argv[i], '=');
    if (eq != nullptr && std::strchr(argv[i], '/') == nullptr) o.kv[std::string(argv[i], static_cast<size_t>(eq - argv[i]))] = eq + 1;
    else o.libs.push_back(argv[i]);
  }
  std::vector<Lib> libs;
  for (const auto& p : o.libs) libs.push_back(open_lib(p));
  std::printf("cpu: %s\n", cpu_model().c_str());
  for (const auto& l : libs) std::printf("%s: %s\n", l.path.c_str(), l.build_info());
  const std::string kind = argv[1];
  if (kind == "gemv") return gemv(o, libs);
  if (kind == "decode") return decode(o, libs);
  if (kind == "scatter") return scatter(o, libs);
  if (kind == "prefill") return prefill(o, libs);
  if (kind == "lora") return lora(o, libs);
  if (kind == "quant") return quant(o, libs);
  std::fprintf(stderr, "rkv_ab: unknown kind %s (gemv, decode, scatter, prefill, lora, quant)\n", kind.c_str());
  return 2;
}
