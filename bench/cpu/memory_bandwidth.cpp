// memory_bandwidth: how fast one or more threads can read a buffer of a given size again and
// again, the bound of a batch-1 recurrent layer, which reads its whole R every step. Each thread
// sums its own buffer (AVX2 loads when the CPU has them); the sizes of interest are one layer's R
// (a 512-unit GRU: 3 MiB; one direction of a 1024-unit LSTM: 16 MiB) against the caches.
//   memory_bandwidth [--mib N]... [--threads T]...   (defaults: 3 8 16 64 MiB, 1 and 2 threads)
// Prints one line per (size, threads): GB/s per thread and in total.
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

__attribute__((target("avx2"))) float sum_avx2(const float* p, std::size_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  for (std::size_t i = 0; i + 32 <= n; i += 32) {
    a = _mm256_add_ps(a, _mm256_loadu_ps(p + i));
    b = _mm256_add_ps(b, _mm256_loadu_ps(p + i + 8));
    c = _mm256_add_ps(c, _mm256_loadu_ps(p + i + 16));
    d = _mm256_add_ps(d, _mm256_loadu_ps(p + i + 24));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  return lanes[0];
}

float sum_scalar(const float* p, std::size_t n) {
  float s[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += p[i + k];
  return s[0] + s[1] + s[2] + s[3];
}

// GB/s of `threads` threads each reading its own `mib` MiB buffer `passes` times (after 3 warm-up
// passes), per thread.
std::vector<double> measure(std::size_t mib, int threads, int passes) {
  const std::size_t n = mib * 1024 * 1024 / sizeof(float);
  const bool avx2 = __builtin_cpu_supports("avx2");
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(threads),
                                          std::vector<float>(n, 1.0f));
  std::vector<double> gbs(static_cast<std::size_t>(threads), 0.0);
  std::vector<float> sink(static_cast<std::size_t>(threads), 0.0f);
  auto run = [&](int t) {
    const float* p = buffers[static_cast<std::size_t>(t)].data();
    float s = 0;
    for (int r = 0; r < 3; ++r) s += avx2 ? sum_avx2(p, n) : sum_scalar(p, n);
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < passes; ++r) s += avx2 ? sum_avx2(p, n) : sum_scalar(p, n);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    gbs[static_cast<std::size_t>(t)] =
        static_cast<double>(passes) * static_cast<double>(n * sizeof(float)) / seconds / 1e9;
    sink[static_cast<std::size_t>(t)] = s;  // keeps the sums alive
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(run, t);
  for (auto& w : workers) w.join();
  return gbs;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  std::vector<int> thread_counts;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf(
          "memory_bandwidth [--mib N]... [--threads T]...\n"
          "  Read bandwidth of T threads, each summing its own N MiB buffer 50 times.\n"
          "  Defaults: --mib 3 8 16 64, --threads 1 2.\n");
      return 0;
    }
    if (i + 1 < argc && std::strcmp(argv[i], "--mib") == 0) {
      sizes.push_back(static_cast<std::size_t>(std::atol(argv[++i])));
    } else if (i + 1 < argc && std::strcmp(argv[i], "--threads") == 0) {
      thread_counts.push_back(std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "memory_bandwidth: unknown argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {3, 8, 16, 64};
  if (thread_counts.empty()) thread_counts = {1, 2};
  for (std::size_t mib : sizes) {
    for (int threads : thread_counts) {
      if (mib == 0 || threads <= 0) continue;
      const std::vector<double> gbs = measure(mib, threads, 50);
      double total = 0;
      std::printf("%3zu MiB x %d thread(s):", mib, threads);
      for (double g : gbs) {
        std::printf(" %.1f", g);
        total += g;
      }
      std::printf(" GB/s per thread, %.1f GB/s in total\n", total);
    }
  }
  return 0;
}
