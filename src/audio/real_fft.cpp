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
  if (half_ >= 2 && (half_ & (half_ - 1)) == 0) {
    int bits = 0;
    while ((1 << bits) < half_) ++bits;
    bit_reversed_.resize(static_cast<std::size_t>(half_));
    for (int n = 0; n < half_; ++n) {
      int r = 0;
      for (int b = 0; b < bits; ++b) r |= ((n >> b) & 1) << (bits - 1 - b);
      bit_reversed_[static_cast<std::size_t>(n)] = r;
    }
    for (int h = 1; h < half_; h *= 2) {
      for (int j = 0; j < h; ++j) {
        const Complex w = half_twiddles_[static_cast<std::size_t>(j) * (half_ / (2 * h))];
        stage_twiddles_.push_back(w.real());
        stage_twiddles_.push_back(w.imag());
      }
    }
  }
}

void RealFft::power_of_two_fft(double* data) const {
  // Radix-2 decimation in time; complex products written out (std::complex's operator* checks
  // for NaN and infinity on every multiply).
  const double* w = stage_twiddles_.data();
  for (int h = 1; h < half_; h *= 2) {
    for (int i = 0; i < half_; i += 2 * h) {
      double* lo = data + 2 * i;
      double* hi = data + 2 * (i + h);
      for (int j = 0; j < h; ++j) {
        const double wr = w[2 * j], wi = w[2 * j + 1];
        const double xr = hi[2 * j], xi = hi[2 * j + 1];
        const double vr = xr * wr - xi * wi;
        const double vi = xr * wi + xi * wr;
        const double ur = lo[2 * j], ui = lo[2 * j + 1];
        lo[2 * j] = ur + vr;
        lo[2 * j + 1] = ui + vi;
        hi[2 * j] = ur - vr;
        hi[2 * j + 1] = ui - vi;
      }
    }
    w += 2 * h;
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
  Complex* transformed = scratch.data();
  if (!bit_reversed_.empty()) {
    double* data = reinterpret_cast<double*>(transformed);
    for (int n = 0; n < half_; ++n) {
      const auto r = static_cast<std::size_t>(bit_reversed_[static_cast<std::size_t>(n)]);
      data[2 * r] = input[2 * n];
      data[2 * r + 1] = input[2 * n + 1];
    }
    power_of_two_fft(data);
  } else {
    Complex* packed = spectrum.data();  // spectrum has half_ + 1 slots; the input uses half_
    for (int n = 0; n < half_; ++n) packed[n] = Complex(input[2 * n], input[2 * n + 1]);
    complex_fft(packed, transformed, half_, 1, 0, 1);
  }
  for (int k = 0; k <= half_; ++k) {
    const Complex z_k = transformed[k == half_ ? 0 : k];
    const Complex z_other = transformed[k == 0 ? 0 : half_ - k];  // conjugated below
    const double even_r = 0.5 * (z_k.real() + z_other.real());
    const double even_i = 0.5 * (z_k.imag() - z_other.imag());
    // odd = (z_k - conj(z_other)) / 2i
    const double odd_r = 0.5 * (z_k.imag() + z_other.imag());
    const double odd_i = -0.5 * (z_k.real() - z_other.real());
    const double tr = real_twiddles_[static_cast<std::size_t>(k)].real();
    const double ti = real_twiddles_[static_cast<std::size_t>(k)].imag();
    spectrum[static_cast<std::size_t>(k)] =
        Complex(even_r + tr * odd_r - ti * odd_i, even_i + tr * odd_i + ti * odd_r);
  }
}

}  // namespace voxrt::audio
