// A real-input FFT for any even size whose half has small factors (512 for fbank, 320 for DS2
// spectrograms): a mixed-radix complex FFT of half the size plus the usual real-packing step.
// Plans are immutable after construction, so one plan serves many streams.
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

  int size_;
  int half_;
  std::vector<int> factors_;                         // of half_, largest radix first
  std::vector<std::complex<double>> half_twiddles_;  // exp(-2 pi i k / half_)
  std::vector<std::complex<double>> real_twiddles_;  // exp(-2 pi i k / size_), k <= half_
};

}  // namespace voxrt::audio
