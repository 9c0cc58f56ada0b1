#include "audio/resampler.h"

#include <soxr.h>

#include <cmath>

namespace voxrt::audio {
namespace {

unsigned long soxr_recipe(ResamplerQuality quality) {
  switch (quality) {
    case ResamplerQuality::kQuick: return SOXR_QQ;
    case ResamplerQuality::kLow: return SOXR_LQ;
    case ResamplerQuality::kMedium: return SOXR_MQ;
    case ResamplerQuality::kHigh: return SOXR_HQ;
    case ResamplerQuality::kVeryHigh: return SOXR_VHQ;
  }
  return SOXR_HQ;
}

}  // namespace

void StreamingResampler::SoxrDeleter::operator()(soxr* handle) const {
  soxr_delete(handle);
}

Expected<StreamingResampler> StreamingResampler::create(double input_rate_hz, double output_rate_hz,
                                                        ResamplerQuality quality) {
  if (!(input_rate_hz > 0) || !(output_rate_hz > 0) || !std::isfinite(input_rate_hz) ||
      !std::isfinite(output_rate_hz)) {
    return invalid_argument("resampler: expected positive finite rates, found ", input_rate_hz,
                            " Hz -> ", output_rate_hz, " Hz");
  }
  StreamingResampler resampler(input_rate_hz, output_rate_hz, quality);
  VOXRT_RETURN_IF_ERROR(resampler.open());
  return resampler;
}

Status StreamingResampler::open() {
  if (is_passthrough()) return Status::ok();
  soxr_error_t error = nullptr;
  const soxr_io_spec_t io_spec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality_spec = soxr_quality_spec(soxr_recipe(quality_), 0);
  // One thread: streams are many and each is small; parallelism comes from the streams.
  const soxr_runtime_spec_t runtime_spec = soxr_runtime_spec(1);
  handle_.reset(soxr_create(input_rate_hz_, output_rate_hz_, 1, &error, &io_spec, &quality_spec,
                            &runtime_spec));
  if (error != nullptr || !handle_) {
    return internal_error("resampler ", input_rate_hz_, " Hz -> ", output_rate_hz_,
                          " Hz: soxr_create failed: ", error != nullptr ? error : "no handle");
  }
  return Status::ok();
}

Status StreamingResampler::process(std::span<const float> input, std::vector<float>& output) {
  if (is_passthrough()) {
    output.insert(output.end(), input.begin(), input.end());
    return Status::ok();
  }
  const double ratio = output_rate_hz_ / input_rate_hz_;
  std::size_t consumed = 0;
  while (consumed < input.size()) {
    const std::size_t remaining = input.size() - consumed;
    const std::size_t room = static_cast<std::size_t>(std::ceil(remaining * ratio)) + 256;
    const std::size_t old_size = output.size();
    output.resize(old_size + room);
    std::size_t input_done = 0;
    std::size_t output_done = 0;
    soxr_error_t error = soxr_process(handle_.get(), input.data() + consumed, remaining,
                                      &input_done, output.data() + old_size, room, &output_done);
    output.resize(old_size + output_done);
    if (error != nullptr) return internal_error("resampler: soxr_process failed: ", error);
    consumed += input_done;
    if (input_done == 0 && output_done == 0) {
      return internal_error("resampler: soxr made no progress with ", remaining, " samples left");
    }
  }
  return Status::ok();
}

Status StreamingResampler::flush(std::vector<float>& output) {
  if (is_passthrough()) return Status::ok();
  constexpr std::size_t kRoom = 4096;
  while (true) {
    const std::size_t old_size = output.size();
    output.resize(old_size + kRoom);
    std::size_t output_done = 0;
    soxr_error_t error = soxr_process(handle_.get(), nullptr, 0, nullptr, output.data() + old_size,
                                      kRoom, &output_done);
    output.resize(old_size + output_done);
    if (error != nullptr) return internal_error("resampler: soxr flush failed: ", error);
    if (output_done == 0) break;
  }
  // soxr takes no input after the end-of-input signal; clearing readies it for a new stream.
  soxr_error_t error = soxr_clear(handle_.get());
  if (error != nullptr) return internal_error("resampler: soxr_clear failed: ", error);
  return Status::ok();
}

Expected<std::vector<float>> resample(std::span<const float> samples, double input_rate_hz,
                                      double output_rate_hz) {
  VOXRT_ASSIGN_OR_RETURN(auto resampler, StreamingResampler::create(input_rate_hz, output_rate_hz));
  std::vector<float> output;
  VOXRT_RETURN_IF_ERROR(resampler.process(samples, output));
  VOXRT_RETURN_IF_ERROR(resampler.flush(output));
  return output;
}

}  // namespace voxrt::audio
