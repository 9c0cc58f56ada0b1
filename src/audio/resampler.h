// Streaming sample-rate conversion with libsoxr: the filter state is carried between calls, so
// audio fed in pieces of any size gives the same output as audio fed whole (within float
// rounding).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "voxrt/status.h"

struct soxr;  // libsoxr's handle, kept out of this header.

namespace voxrt::audio {

enum class ResamplerQuality : int { kQuick, kLow, kMedium, kHigh, kVeryHigh };

class StreamingResampler {
 public:
  // Equal rates make a pass-through that copies samples.
  static Expected<StreamingResampler> create(double input_rate_hz, double output_rate_hz,
                                             ResamplerQuality quality = ResamplerQuality::kHigh);

  // Appends the output made available by `input` (possibly none yet: the filter has a delay).
  Status process(std::span<const float> input, std::vector<float>& output);
  // Drains the filter at the end of the stream; the resampler is then ready for a new stream.
  Status flush(std::vector<float>& output);

  double input_rate_hz() const { return input_rate_hz_; }
  double output_rate_hz() const { return output_rate_hz_; }
  bool is_passthrough() const { return input_rate_hz_ == output_rate_hz_; }

 private:
  struct SoxrDeleter {
    void operator()(soxr* handle) const;
  };
  StreamingResampler(double input_rate_hz, double output_rate_hz, ResamplerQuality quality)
      : input_rate_hz_(input_rate_hz), output_rate_hz_(output_rate_hz), quality_(quality) {}
  Status open();

  double input_rate_hz_;
  double output_rate_hz_;
  ResamplerQuality quality_;
  std::unique_ptr<soxr, SoxrDeleter> handle_;
};

// Convenience for whole clips: resample `samples` at `input_rate_hz` to `output_rate_hz`.
Expected<std::vector<float>> resample(std::span<const float> samples, double input_rate_hz,
                                      double output_rate_hz);

}  // namespace voxrt::audio
