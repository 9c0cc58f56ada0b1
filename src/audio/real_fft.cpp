#include "audio/real_fft.h"

#include <numbers>

namespace voxrt::audio {

using Complex = std::complex<double>;

Expected<RealFft> RealFft::create(int size) {
  if (size < 2 || size % 2 != 0 || size > (1 << 22)) {
    return invalid_argument("real FFT: expected an even size from 2 to 2^22, found ", size);
  }
  return RealFft(size);
}

RealFft::RealFft(int size) : size_(size), half_(size / 2) {
  int remaining = half_;
  for (int radix : {4, 2, 3, 5}) {
    while (remaining % radix == 0) {
      factors_.push_back(radix);
      remaining /= radix;
    }
  }
  // Any prime left over gets the generic (quadratic) butterfly; sizes used here never need it.
  for (int p = 7; remaining > 1; p += 2) {
    while (remaining % p == 0) {
      factors_.push_back(p);
      remaining /= p;
    }
  }
  half_twiddles_.resize(static_cast<std::size_t>(half_));
  for (int k = 0; k < half_; ++k) {
    half_twiddles_[k] = std::polar(1.0, -2.0 * std::numbers::pi * k / half_);
  }
  real_twiddles_.resize(static_cast<std::size_t>(half_) + 1);
  for (int k = 0; k <= half_; ++k) {
    real_twiddles_[k] = std::polar(1.0, -2.0 * std::numbers::pi * k / size_);
  }
}

// Decimation in time, as kissfft does: split into `radix` interleaved sub-sequences, transform
// each, combine with twiddles. Twiddles come from the table for half_ at `twiddle_stride`.
void RealFft::complex_fft(const Complex* input, Complex* output, int length, int input_stride,
                          std::size_t factor_index, int twiddle_stride) const {
  if (length == 1) {
    output[0] = input[0];
    return;
  }
  const int radix = factors_[factor_index];
  const int sub_length = length / radix;
  for (int j = 0; j < radix; ++j) {
    complex_fft(input + j * input_stride, output + j * sub_length, sub_length, input_stride * radix,
                factor_index + 1, twiddle_stride * radix);
  }
  Complex terms[64];
  std::vector<Complex> big_terms;
  Complex* t = terms;
  if (radix > 64) {
    big_terms.resize(static_cast<std::size_t>(radix));
    t = big_terms.data();
  }
  for (int k = 0; k < sub_length; ++k) {
    for (int j = 0; j < radix; ++j) {
      const std::size_t twiddle = static_cast<std::size_t>(j) * k * twiddle_stride % half_;
      t[j] = output[j * sub_length + k] * half_twiddles_[twiddle];
    }
    if (radix == 2) {
      output[k] = t[0] + t[1];
      output[k + sub_length] = t[0] - t[1];
    } else if (radix == 4) {
      const Complex a = t[0] + t[2];
      const Complex b = t[0] - t[2];
      const Complex c = t[1] + t[3];
      const Complex d = t[1] - t[3];
      const Complex minus_i_d(d.imag(), -d.real());
      output[k] = a + c;
      output[k + sub_length] = b + minus_i_d;
      output[k + 2 * sub_length] = a - c;
      output[k + 3 * sub_length] = b - minus_i_d;
    } else {
      for (int q = 0; q < radix; ++q) {
        Complex sum = 0.0;
        for (int j = 0; j < radix; ++j) {
          const std::size_t twiddle =
              static_cast<std::size_t>(j) * q * sub_length * twiddle_stride % half_;
          sum += t[j] * half_twiddles_[twiddle];
        }
        output[k + q * sub_length] = sum;
      }
    }
  }
}

void RealFft::forward(std::span<const double> input, std::span<Complex> spectrum,
                      std::span<Complex> scratch) const {
  // Pack even samples as real parts and odd ones as imaginary parts: one half-size transform.
  Complex* packed = spectrum.data();  // spectrum has half_ + 1 slots; the input uses half_
  for (int n = 0; n < half_; ++n) packed[n] = Complex(input[2 * n], input[2 * n + 1]);
  Complex* transformed = scratch.data();
  complex_fft(packed, transformed, half_, 1, 0, 1);
  for (int k = 0; k <= half_; ++k) {
    const Complex z_k = transformed[k % half_];
    const Complex z_mirror = std::conj(transformed[(half_ - k) % half_]);
    const Complex even = 0.5 * (z_k + z_mirror);
    const Complex difference = z_k - z_mirror;
    const Complex odd(0.5 * difference.imag(), -0.5 * difference.real());  // difference / 2i
    spectrum[k] = even + real_twiddles_[k] * odd;
  }
}

}  // namespace voxrt::audio
