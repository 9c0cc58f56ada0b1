#include "audio/feature_config.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "audio/nemo_log_mel.h"
#include "audio/torchaudio_log_mel.h"
#include "audio/whisper_log_mel.h"

namespace voxrt::audio {
namespace {

constexpr const char* kPrefix = "voxrt.feature.";

Expected<double> parse_double(const std::string& key, const std::string& text) {
  double value = 0;
  const auto* begin = text.data();
  const auto* end = text.data() + text.size();
  while (begin < end && *begin == ' ') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return invalid_argument("metadata ", key, ": expected a number, found '", text, "'");
  }
  return value;
}

Expected<int> parse_int(const std::string& key, const std::string& text) {
  VOXRT_ASSIGN_OR_RETURN(double value, parse_double(key, text));
  if (value != std::floor(value) || std::fabs(value) > 1e9) {
    return invalid_argument("metadata ", key, ": expected an integer, found '", text, "'");
  }
  return static_cast<int>(value);
}

Expected<bool> parse_bool(const std::string& key, const std::string& text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return invalid_argument("metadata ", key, ": expected 0/1/true/false, found '", text, "'");
}

Expected<std::vector<float>> parse_floats(const std::string& key, const std::string& text) {
  std::vector<float> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    VOXRT_ASSIGN_OR_RETURN(double value, parse_double(str_cat(key, "[", values.size(), "]"), item));
    values.push_back(static_cast<float>(value));
    start = comma + 1;
  }
  return values;
}

}  // namespace

const char* feature_type_name(FeatureType type) {
  switch (type) {
    case FeatureType::kFbank: return "fbank";
    case FeatureType::kLinearSpectrogram: return "linear_spectrogram";
    case FeatureType::kWaveform: return "waveform";
    case FeatureType::kWhisperLogMel: return "whisper_log_mel";
    case FeatureType::kTorchaudioLogMel: return "torchaudio_log_mel";
    case FeatureType::kNemoLogMel: return "nemo_log_mel";
  }
  return "unknown";
}

const char* window_type_name(WindowType type) {
  switch (type) {
    case WindowType::kPovey: return "povey";
    case WindowType::kHamming: return "hamming";
    case WindowType::kHann: return "hann";
    case WindowType::kRectangular: return "rectangular";
  }
  return "unknown";
}

FeatureConfig FeatureConfig::linear_spectrogram() {
  FeatureConfig config;
  config.type = FeatureType::kLinearSpectrogram;
  config.frame_length_ms = 20.0;
  config.frame_shift_ms = 10.0;
  config.num_bins = 161;
  config.preemphasis = 0.0;
  config.remove_dc_offset = false;
  config.window = WindowType::kHamming;
  config.periodic_window = true;
  config.round_to_power_of_two = false;
  config.use_power = false;
  config.waveform_scale = 1.0;
  return config;
}

FeatureConfig FeatureConfig::waveform(int sample_rate_hz, double hop_ms) {
  FeatureConfig config;
  config.type = FeatureType::kWaveform;
  config.sample_rate_hz = sample_rate_hz;
  config.frame_length_ms = hop_ms;
  config.frame_shift_ms = hop_ms;
  config.num_bins = config.frame_shift_samples();
  config.preemphasis = 0.0;
  config.remove_dc_offset = false;
  config.window = WindowType::kRectangular;
  config.snip_edges = true;
  config.round_to_power_of_two = false;
  config.waveform_scale = 1.0;
  return config;
}

Expected<FeatureConfig> FeatureConfig::from_metadata(
    const std::map<std::string, std::string>& metadata) {
  auto find = [&](const char* name) -> const std::string* {
    auto it = metadata.find(str_cat(kPrefix, name));
    return it == metadata.end() ? nullptr : &it->second;
  };
  FeatureConfig config;
  if (const std::string* type = find("type")) {
    if (*type == "linear_spectrogram") {
      config = linear_spectrogram();
    } else if (*type == "waveform") {
      config = waveform(config.sample_rate_hz, config.frame_shift_ms);
    } else if (*type == "whisper_log_mel") {
      config = whisper_feature_config(80);
    } else if (*type == "torchaudio_log_mel") {
      config = torchaudio_feature_config(80);
    } else if (*type == "nemo_log_mel") {
      config = nemo_log_mel_feature_config(80);
    } else if (*type != "fbank") {
      return invalid_argument(
          "metadata voxrt.feature.type: expected fbank, linear_spectrogram, waveform, "
          "whisper_log_mel, torchaudio_log_mel or nemo_log_mel, "
          "found '",
          *type, "'");
    }
  }
  auto read_double = [&](const char* name, double& field) -> Status {
    if (const std::string* text = find(name)) {
      VOXRT_ASSIGN_OR_RETURN(field, parse_double(str_cat(kPrefix, name), *text));
    }
    return Status::ok();
  };
  auto read_int = [&](const char* name, int& field) -> Status {
    if (const std::string* text = find(name)) {
      VOXRT_ASSIGN_OR_RETURN(field, parse_int(str_cat(kPrefix, name), *text));
    }
    return Status::ok();
  };
  auto read_bool = [&](const char* name, bool& field) -> Status {
    if (const std::string* text = find(name)) {
      VOXRT_ASSIGN_OR_RETURN(field, parse_bool(str_cat(kPrefix, name), *text));
    }
    return Status::ok();
  };
  VOXRT_RETURN_IF_ERROR(read_int("num_bins", config.num_bins));
  VOXRT_RETURN_IF_ERROR(read_int("sample_rate_hz", config.sample_rate_hz));
  VOXRT_RETURN_IF_ERROR(read_double("frame_length_ms", config.frame_length_ms));
  VOXRT_RETURN_IF_ERROR(read_double("frame_shift_ms", config.frame_shift_ms));
  VOXRT_RETURN_IF_ERROR(read_double("dither", config.dither));
  VOXRT_RETURN_IF_ERROR(read_double("preemphasis", config.preemphasis));
  VOXRT_RETURN_IF_ERROR(read_bool("remove_dc_offset", config.remove_dc_offset));
  VOXRT_RETURN_IF_ERROR(read_bool("snip_edges", config.snip_edges));
  VOXRT_RETURN_IF_ERROR(read_bool("periodic_window", config.periodic_window));
  VOXRT_RETURN_IF_ERROR(read_bool("round_to_power_of_two", config.round_to_power_of_two));
  VOXRT_RETURN_IF_ERROR(read_double("low_freq_hz", config.low_freq_hz));
  VOXRT_RETURN_IF_ERROR(read_double("high_freq_hz", config.high_freq_hz));
  VOXRT_RETURN_IF_ERROR(read_double("energy_floor", config.energy_floor));
  VOXRT_RETURN_IF_ERROR(read_bool("use_energy", config.use_energy));
  VOXRT_RETURN_IF_ERROR(read_bool("raw_energy", config.raw_energy));
  VOXRT_RETURN_IF_ERROR(read_bool("use_log_fbank", config.use_log_fbank));
  VOXRT_RETURN_IF_ERROR(read_bool("use_power", config.use_power));
  VOXRT_RETURN_IF_ERROR(read_double("waveform_scale", config.waveform_scale));
  if (const std::string* window = find("window")) {
    if (*window == "povey") {
      config.window = WindowType::kPovey;
    } else if (*window == "hamming") {
      config.window = WindowType::kHamming;
    } else if (*window == "hann" || *window == "hanning") {
      config.window = WindowType::kHann;
    } else if (*window == "rectangular") {
      config.window = WindowType::kRectangular;
    } else {
      return invalid_argument(
          "metadata voxrt.feature.window: expected povey, hamming, hann or "
          "rectangular, found '",
          *window, "'");
    }
  }
  if (const std::string* text = find("mean")) {
    VOXRT_ASSIGN_OR_RETURN(config.mean, parse_floats("voxrt.feature.mean", *text));
  }
  if (const std::string* text = find("inv_std")) {
    VOXRT_ASSIGN_OR_RETURN(config.inv_std, parse_floats("voxrt.feature.inv_std", *text));
  }
  VOXRT_RETURN_IF_ERROR(config.validate().with_context("feature metadata"));
  return config;
}

int FeatureConfig::frame_length_samples() const {
  return static_cast<int>(std::lround(sample_rate_hz * frame_length_ms / 1000.0));
}

int FeatureConfig::frame_shift_samples() const {
  return static_cast<int>(std::lround(sample_rate_hz * frame_shift_ms / 1000.0));
}

int FeatureConfig::fft_size() const {
  const int length = frame_length_samples();
  if (!round_to_power_of_two) return length + (length % 2);
  int size = 1;
  while (size < length) size *= 2;
  return size;
}

int FeatureConfig::output_dim() const {
  return num_bins + (type == FeatureType::kFbank && use_energy ? 1 : 0);
}

Status FeatureConfig::validate() const {
  auto fail = [this](const auto&... parts) {
    return invalid_argument("feature config ", to_string(), ": ", parts...);
  };
  if (sample_rate_hz < 1000 || sample_rate_hz > 384000) {
    return fail("expected sample_rate_hz in [1000, 384000], found ", sample_rate_hz);
  }
  if (!(frame_shift_ms > 0) || frame_shift_samples() < 1) {
    return fail("expected frame_shift_ms of at least one sample, found ", frame_shift_ms);
  }
  if (!(frame_length_ms > 0) || frame_length_samples() < 2 || frame_length_samples() > (1 << 20)) {
    return fail("expected frame_length_ms of 2 to 2^20 samples, found ", frame_length_ms);
  }
  if (!(dither >= 0)) return fail("expected dither >= 0, found ", dither);
  if (!(preemphasis >= 0 && preemphasis <= 1)) {
    return fail("expected preemphasis in [0, 1], found ", preemphasis);
  }
  if (!(waveform_scale > 0)) return fail("expected waveform_scale > 0, found ", waveform_scale);
  if (!(energy_floor >= 0)) return fail("expected energy_floor >= 0, found ", energy_floor);
  if (type == FeatureType::kWhisperLogMel || type == FeatureType::kTorchaudioLogMel ||
      type == FeatureType::kNemoLogMel) {
    if (num_bins < 1 || num_bins > 1024) {
      return fail("expected 1 to 1024 mel bins, found ", num_bins);
    }
    if (use_energy) return fail("use_energy applies to fbank only");
  } else if (type == FeatureType::kFbank) {
    const double nyquist_hz = 0.5 * sample_rate_hz;
    const double high_hz = high_freq_hz > 0 ? high_freq_hz : nyquist_hz + high_freq_hz;
    if (num_bins < 1 || num_bins > 1024) {
      return fail("expected 1 to 1024 mel bins, found ", num_bins);
    }
    if (!(low_freq_hz >= 0 && low_freq_hz < nyquist_hz)) {
      return fail("expected low_freq_hz in [0, ", nyquist_hz, "), found ", low_freq_hz);
    }
    if (!(high_hz > low_freq_hz && high_hz <= nyquist_hz)) {
      return fail("expected high frequency in (", low_freq_hz, ", ", nyquist_hz, "], found ",
                  high_hz, " (high_freq_hz ", high_freq_hz, ")");
    }
  } else if (type == FeatureType::kWaveform) {
    if (frame_length_samples() != frame_shift_samples() || num_bins != frame_shift_samples()) {
      return fail("waveform frames are one hop: expected frame_length_ms = frame_shift_ms and ",
                  "num_bins = samples per hop (", frame_shift_samples(), "), found ", num_bins,
                  " bins of ", frame_length_samples(), " samples");
    }
    if (!snip_edges || dither != 0 || use_energy || !mean.empty() || !inv_std.empty())
      return fail("waveform frames take no snip_edges false, dither, energy or normalisation");
  } else {
    if (num_bins != fft_size() / 2 + 1) {
      return fail("expected num_bins = fft_size / 2 + 1 = ", fft_size() / 2 + 1,
                  " for a linear spectrogram, found ", num_bins);
    }
    if (use_energy) return fail("use_energy applies to fbank only");
  }
  if (!mean.empty() && static_cast<int>(mean.size()) != output_dim()) {
    return fail("expected ", output_dim(), " mean values, found ", mean.size());
  }
  if (!inv_std.empty() && static_cast<int>(inv_std.size()) != output_dim()) {
    return fail("expected ", output_dim(), " inv_std values, found ", inv_std.size());
  }
  for (float value : inv_std) {
    if (!std::isfinite(value)) return fail("inv_std holds a non-finite value");
  }
  return Status::ok();
}

std::string FeatureConfig::to_string() const {
  std::ostringstream out;
  out << "{type=" << feature_type_name(type) << " sample_rate_hz=" << sample_rate_hz
      << " frame_length_ms=" << frame_length_ms << " frame_shift_ms=" << frame_shift_ms
      << " num_bins=" << num_bins << " window=" << window_type_name(window)
      << (periodic_window ? "(periodic)" : "") << " preemphasis=" << preemphasis
      << " remove_dc_offset=" << remove_dc_offset << " dither=" << dither
      << " snip_edges=" << snip_edges << " fft_size=" << fft_size()
      << " low_freq_hz=" << low_freq_hz << " high_freq_hz=" << high_freq_hz
      << " use_energy=" << use_energy << " raw_energy=" << raw_energy
      << " energy_floor=" << energy_floor << " use_log_fbank=" << use_log_fbank
      << " use_power=" << use_power << " waveform_scale=" << waveform_scale
      << " normalised=" << (!mean.empty() || !inv_std.empty()) << "}";
  return out.str();
}

}  // namespace voxrt::audio
