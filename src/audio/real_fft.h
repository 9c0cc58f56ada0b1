// A real-input FFT for any even size whose half has small factors (512 for fbank, 320 for DS2
// spectrograms): a complex FFT of half the size plus the usual real-packing step. A power-of-two
// half runs an iterative radix-2 transform over precomputed per-stage twiddles (the server runs
// two of these per 20 ms frame per stream, so it matters); other sizes run the recursive
// mixed-radix one. Plans are immutable after construction, so one plan serves many streams.
#pragma once

#include <complex>
#include <span>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::audio {

class RealFft {
 public:
  static Expected<RealFft> create(int size);

  int size() const { return size_; }
  int num_bins() const { return size_ / 2 + 1; }
  // spectrum[k] = sum_n input[n] exp(-2 pi i k n / size), k = 0 .. size/2. `scratch` must hold
  // size/2 values (per caller, so the plan stays const).
  void forward(std::span<const double> input, std::span<std::complex<double>> spectrum,
               std::span<std::complex<double>> scratch) const;

 private:
  explicit RealFft(int size);
  void complex_fft(const std::complex<double>* input, std::complex<double>* output, int length,
                   int input_stride, std::size_t factor_index, int twiddle_stride) const;
  // In place on `data` (half_ complex values, interleaved re/im) after a bit-reversed load.
  void power_of_two_fft(double* data) const;

  int size_;
  int half_;
  std::vector<int> factors_;                         // of half_, largest radix first
  std::vector<std::complex<double>> half_twiddles_;  // exp(-2 pi i k / half_)
  std::vector<std::complex<double>> real_twiddles_;  // exp(-2 pi i k / size_), k <= half_
  // Power-of-two half only: bit-reversed index of each n, and the twiddles of every stage in
  // turn (stage with butterfly span h: exp(-2 pi i j / 2h), j < h; interleaved re/im).
  std::vector<int> bit_reversed_;
  std::vector<double> stage_twiddles_;
};

}  // namespace voxrt::audio
