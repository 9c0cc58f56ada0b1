#include "stream/encoder_decoder/token_sampling.h"

#include <cmath>
#include <limits>

namespace voxrt::stream {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t sampling_key(std::uint64_t seed, std::uint64_t window, std::uint64_t attempt) {
  return splitmix64(splitmix64(splitmix64(seed) ^ window) ^ attempt);
}

double sampling_uniform(std::uint64_t key, std::uint64_t step) {
  return static_cast<double>(splitmix64(key ^ step) >> 11) * 0x1.0p-53;
}

int sample_token(const float* logits, int count, double temperature, double uniform) {
  double max_logit = -std::numeric_limits<double>::infinity();
  int last_finite = -1;
  for (int i = 0; i < count; ++i) {
    if (!std::isfinite(logits[i])) continue;
    max_logit = std::max(max_logit, static_cast<double>(logits[i]));
    last_finite = i;
  }
  if (last_finite < 0) return -1;
  double total = 0.0;
  for (int i = 0; i < count; ++i) {
    if (std::isfinite(logits[i]))
      total += std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
  }
  const double target = uniform * total;
  double running = 0.0;
  for (int i = 0; i < count; ++i) {
    if (!std::isfinite(logits[i])) continue;
    running += std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
    if (running > target) return i;
  }
  return last_finite;
}

}  // namespace voxrt::stream
