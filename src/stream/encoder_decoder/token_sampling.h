// Sampling a token at a temperature, reproducibly: the temperature fallback (fallback_policy.h)
// decodes a window again by sampling, and the Python reference decoder
// (tests/models/optimum_whisper.py) must draw the very same tokens, so the random numbers come
// from a documented counter-based generator rather than a library's:
// - splitmix64(x): x += 0x9E3779B97F4A7C15; x = (x ^ x >> 30) * 0xBF58476D1CE4E5B9;
//   x = (x ^ x >> 27) * 0x94D049BB133111EB; x ^ x >> 31 (all modulo 2^64);
// - the uniform number of one draw is h >> 11 times 2^-53 (in [0, 1)), where
//   h = splitmix64(splitmix64(splitmix64(splitmix64(seed) ^ window) ^ attempt) ^ step):
//   `window` counts the stream's decoded windows from 0, `attempt` the window's temperatures
//   (0: the first), `step` the tokens chosen in this attempt (end-of-text included);
// - the token: weights w_i = exp((l_i - max_j l_j) / T) over the ids whose logit l_i is finite
//   (in double, the logits as given), summed in id order; the first id whose running sum exceeds
//   u times the total (the last finite id if rounding leaves none).
// A draw depends only on the stream's own counters, so a stream's tokens do not depend on its
// batch mates.
#pragma once

#include <cstdint>

namespace voxrt::stream {

std::uint64_t splitmix64(std::uint64_t x);

// The key of one attempt at one window; sampling_uniform() adds the step.
std::uint64_t sampling_key(std::uint64_t seed, std::uint64_t window, std::uint64_t attempt);
// In [0, 1).
double sampling_uniform(std::uint64_t key, std::uint64_t step);

// The id drawn from `logits` (`count` values, -infinity for forbidden ids) at `temperature` > 0
// with the uniform number `uniform`; -1 when no logit is finite.
int sample_token(const float* logits, int count, double temperature, double uniform);

}  // namespace voxrt::stream
