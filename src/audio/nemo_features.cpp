#include "audio/nemo_features.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <sstream>

namespace voxrt::audio {
namespace {

constexpr const char* kPrefix = "voxrt.nemo.";
// NeMo adds this to every standard deviation so that a constant bin does not divide by zero.
constexpr double kStdGuard = 1e-5;

// librosa's Slaney mel scale (htk=False): linear below 1 kHz, logarithmic above.
constexpr double kSlaneyHzPerMel = 200.0 / 3.0;
constexpr double kSlaneyLogFromHz = 1000.0;
const double kSlaneyLogStep = std::log(6.4) / 27.0;

double hz_to_slaney_mel(double hz) {
  const double log_from_mel = kSlaneyLogFromHz / kSlaneyHzPerMel;
  if (hz < kSlaneyLogFromHz) return hz / kSlaneyHzPerMel;
  return log_from_mel + std::log(hz / kSlaneyLogFromHz) / kSlaneyLogStep;
}

double slaney_mel_to_hz(double mel) {
  const double log_from_mel = kSlaneyLogFromHz / kSlaneyHzPerMel;
  if (mel < log_from_mel) return mel * kSlaneyHzPerMel;
  return kSlaneyLogFromHz * std::exp(kSlaneyLogStep * (mel - log_from_mel));
}

Expected<double> number(const std::string& key, const std::string& text) {
  std::istringstream in(text);
  double value = 0;
  in >> value;
  if (in.fail() || !in.eof() || !std::isfinite(value))
    return invalid_argument("metadata ", key, ": expected a number, found '", text, "'");
  return value;
}

std::string format(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

const char* nemo_normalize_name(NemoNormalize normalize) {
  switch (normalize) {
    case NemoNormalize::kPerFeature: return "per_feature";
    case NemoNormalize::kAllFeatures: return "all_features";
    case NemoNormalize::kNone: return "NA";
  }
  return "unknown";
}

Expected<NemoNormalize> nemo_normalize_from_name(const std::string& name) {
  if (name == "per_feature") return NemoNormalize::kPerFeature;
  if (name == "all_features") return NemoNormalize::kAllFeatures;
  if (name.empty() || name == "NA" || name == "none" || name == "None" || name == "null")
    return NemoNormalize::kNone;
  return unsupported("NeMo feature normalisation '", name,
                     "': expected per_feature, all_features or NA (fixed_mean/fixed_std are not "
                     "supported)");
}

int NemoFeatureConfig::window_samples() const {
  return static_cast<int>(std::lround(window_size_s * sample_rate_hz));
}

int NemoFeatureConfig::hop_samples() const {
  return static_cast<int>(std::lround(window_stride_s * sample_rate_hz));
}

int NemoFeatureConfig::fft_size() const {
  if (n_fft > 0) return n_fft;
  int size = 1;
  while (size < window_samples()) size *= 2;
  return size;
}

std::int64_t NemoFeatureConfig::frames_for(std::int64_t samples) const {
  // NeMo's get_seq_len with centring: (samples + 2 * (n_fft / 2) - n_fft) / hop + 1.
  return (samples + 2 * (fft_size() / 2) - fft_size()) / hop_samples() + 1;
}

Status NemoFeatureConfig::validate() const {
  auto fail = [](const auto&... parts) { return invalid_argument("NeMo front end: ", parts...); };
  if (sample_rate_hz < 1000 || sample_rate_hz > 384000)
    return fail("expected a sample rate of 1000 to 384000 Hz, found ", sample_rate_hz);
  if (hop_samples() < 1) return fail("window_stride ", window_stride_s, " s is under a sample");
  if (window_samples() < 2) return fail("window_size ", window_size_s, " s is under 2 samples");
  if (fft_size() < window_samples() || fft_size() % 2 != 0 || fft_size() > (1 << 20))
    return fail("expected an even n_fft of at least the window (", window_samples(),
                " samples), found ", fft_size());
  if (n_mels < 1 || n_mels > 1024) return fail("expected 1 to 1024 mel bins, found ", n_mels);
  if (!(preemphasis >= 0 && preemphasis <= 1))
    return fail("expected preemph in [0, 1], found ", preemphasis);
  if (!(log_zero_guard_value > 0)) return fail("expected log_zero_guard_value > 0");
  const double nyquist = 0.5 * sample_rate_hz;
  const double high = high_freq_hz > 0 ? high_freq_hz : nyquist;
  if (!(low_freq_hz >= 0 && low_freq_hz < high && high <= nyquist))
    return fail("expected 0 <= lowfreq < highfreq <= ", nyquist, " Hz, found ", low_freq_hz,
                " and ", high);
  if (!(mag_power > 0)) return fail("expected mag_power > 0, found ", mag_power);
  if (pad_to < 0) return fail("expected pad_to >= 0, found ", pad_to);
  return Status::ok();
}

Expected<NemoFeatureConfig> NemoFeatureConfig::from_metadata(
    const std::map<std::string, std::string>& metadata) {
  NemoFeatureConfig c;
  auto read = [&](const char* name, auto& field) -> Status {
    const std::string key = std::string(kPrefix) + name;
    auto it = metadata.find(key);
    if (it == metadata.end()) return Status::ok();
    VOXRT_ASSIGN_OR_RETURN(const double value, number(key, it->second));
    using Field = std::remove_reference_t<decltype(field)>;
    if constexpr (std::is_same_v<Field, bool>) {
      field = value != 0;
    } else if constexpr (std::is_integral_v<Field>) {
      if (value != std::floor(value))
        return invalid_argument("metadata ", key, ": expected an integer, found ", it->second);
      field = static_cast<Field>(value);
    } else {
      field = value;
    }
    return Status::ok();
  };
  VOXRT_RETURN_IF_ERROR(read("sample_rate_hz", c.sample_rate_hz));
  VOXRT_RETURN_IF_ERROR(read("window_size_s", c.window_size_s));
  VOXRT_RETURN_IF_ERROR(read("window_stride_s", c.window_stride_s));
  VOXRT_RETURN_IF_ERROR(read("n_fft", c.n_fft));
  VOXRT_RETURN_IF_ERROR(read("n_mels", c.n_mels));
  VOXRT_RETURN_IF_ERROR(read("preemphasis", c.preemphasis));
  VOXRT_RETURN_IF_ERROR(read("log", c.log));
  VOXRT_RETURN_IF_ERROR(read("log_zero_guard_value", c.log_zero_guard_value));
  VOXRT_RETURN_IF_ERROR(read("low_freq_hz", c.low_freq_hz));
  VOXRT_RETURN_IF_ERROR(read("high_freq_hz", c.high_freq_hz));
  VOXRT_RETURN_IF_ERROR(read("mag_power", c.mag_power));
  VOXRT_RETURN_IF_ERROR(read("mel_norm_slaney", c.mel_norm_slaney));
  VOXRT_RETURN_IF_ERROR(read("pad_to", c.pad_to));
  VOXRT_RETURN_IF_ERROR(read("pad_value", c.pad_value));
  VOXRT_RETURN_IF_ERROR(read("reflect_pad", c.reflect_pad));
  if (auto it = metadata.find(std::string(kPrefix) + "log_zero_guard_type"); it != metadata.end()) {
    if (it->second == "add") {
      c.log_guard = NemoLogGuard::kAdd;
    } else if (it->second == "clamp") {
      c.log_guard = NemoLogGuard::kClamp;
    } else {
      return invalid_argument("metadata voxrt.nemo.log_zero_guard_type: expected add or clamp, ",
                              "found '", it->second, "'");
    }
  }
  if (auto it = metadata.find(std::string(kPrefix) + "normalize"); it != metadata.end()) {
    VOXRT_ASSIGN_OR_RETURN(c.normalize, nemo_normalize_from_name(it->second));
  }
  VOXRT_RETURN_IF_ERROR(c.validate());
  return c;
}

std::map<std::string, std::string> NemoFeatureConfig::to_metadata() const {
  const std::string p = kPrefix;
  return {
      {p + "sample_rate_hz", std::to_string(sample_rate_hz)},
      {p + "window_size_s", format(window_size_s)},
      {p + "window_stride_s", format(window_stride_s)},
      {p + "n_fft", std::to_string(fft_size())},
      {p + "n_mels", std::to_string(n_mels)},
      {p + "preemphasis", format(preemphasis)},
      {p + "log", log ? "1" : "0"},
      {p + "log_zero_guard_type", log_guard == NemoLogGuard::kAdd ? "add" : "clamp"},
      {p + "log_zero_guard_value", format(log_zero_guard_value)},
      {p + "low_freq_hz", format(low_freq_hz)},
      {p + "high_freq_hz", format(high_freq_hz)},
      {p + "mag_power", format(mag_power)},
      {p + "mel_norm_slaney", mel_norm_slaney ? "1" : "0"},
      {p + "normalize", nemo_normalize_name(normalize)},
      {p + "pad_to", std::to_string(pad_to)},
      {p + "pad_value", format(pad_value)},
      {p + "reflect_pad", reflect_pad ? "1" : "0"},
  };
}

Expected<NemoFeatureComputer> NemoFeatureComputer::create(const NemoFeatureConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  VOXRT_ASSIGN_OR_RETURN(RealFft fft, RealFft::create(config.fft_size()));
  return NemoFeatureComputer(config, std::move(fft));
}

NemoFeatureComputer::NemoFeatureComputer(const NemoFeatureConfig& config, RealFft fft)
    : config_(config), fft_(std::move(fft)) {
  // torch.hann_window(N, periodic=False): NeMo asks for the symmetric window.
  const int n = config_.window_samples();
  window_.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    window_[static_cast<std::size_t>(i)] =
        0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * i / (n - 1));
  build_mel_weights();
}

// librosa.filters.mel (htk=False, norm 'slaney' or None): triangles between n_mels + 2 points
// equally spaced on the Slaney mel scale, evaluated at the FFT bin frequencies; stored in float as
// librosa returns them (its default dtype) and NeMo keeps them.
void NemoFeatureComputer::build_mel_weights() {
  const int bins = config_.fft_size() / 2 + 1;
  const double nyquist = 0.5 * config_.sample_rate_hz;
  const double high = config_.high_freq_hz > 0 ? config_.high_freq_hz : nyquist;
  const double mel_low = hz_to_slaney_mel(config_.low_freq_hz);
  const double mel_high = hz_to_slaney_mel(high);
  const int points = config_.n_mels + 2;
  std::vector<double> hz(static_cast<std::size_t>(points));
  for (int i = 0; i < points; ++i)
    hz[static_cast<std::size_t>(i)] =
        slaney_mel_to_hz(mel_low + (mel_high - mel_low) * i / (points - 1));
  mel_weights_.assign(static_cast<std::size_t>(config_.n_mels),
                      std::vector<float>(static_cast<std::size_t>(bins), 0.0f));
  for (int m = 0; m < config_.n_mels; ++m) {
    const auto i = static_cast<std::size_t>(m);
    const double lower_width = hz[i + 1] - hz[i];
    const double upper_width = hz[i + 2] - hz[i + 1];
    const double area_norm = config_.mel_norm_slaney ? 2.0 / (hz[i + 2] - hz[i]) : 1.0;
    for (int k = 0; k < bins; ++k) {
      const double f = nyquist * k / (bins - 1);
      const double rising = (f - hz[i]) / lower_width;
      const double falling = (hz[i + 2] - f) / upper_width;
      const double weight = std::max(0.0, std::min(rising, falling));
      mel_weights_[i][static_cast<std::size_t>(k)] = static_cast<float>(weight * area_norm);
    }
  }
  mel_ranges_.clear();
  for (const std::vector<float>& row : mel_weights_) {
    int first = 0;
    int end = static_cast<int>(row.size());
    while (first < end && row[static_cast<std::size_t>(first)] == 0.0f) ++first;
    while (end > first && row[static_cast<std::size_t>(end - 1)] == 0.0f) --end;
    mel_ranges_.emplace_back(first, end);
  }
}

Expected<NemoFeatures> NemoFeatureComputer::compute(std::span<const float> samples) const {
  if (samples.empty()) return invalid_argument("NeMo front end: no samples");
  const auto n = static_cast<std::int64_t>(samples.size());
  const int fft_size = config_.fft_size();
  const int half = fft_size / 2;
  const int hop = config_.hop_samples();
  const int win = config_.window_samples();
  const int window_offset = (fft_size - win) / 2;  // torch.stft centres the window in n_fft
  const auto frames = static_cast<int>(config_.frames_for(n));
  // Pre-emphasis over the whole signal: y[0] = x[0], y[i] = x[i] - a x[i-1].
  std::vector<double> signal(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = samples[static_cast<std::size_t>(i)];
    const double previous = i > 0 ? samples[static_cast<std::size_t>(i - 1)] : 0.0;
    signal[static_cast<std::size_t>(i)] = i > 0 ? x - config_.preemphasis * previous : x;
  }
  auto sample_at = [&](std::int64_t index) -> double {
    if (index >= 0 && index < n) return signal[static_cast<std::size_t>(index)];
    if (!config_.reflect_pad || n < 2) return 0.0;
    // torch's reflect pad mirrors around the edge samples without repeating them.
    while (index < 0 || index >= n) index = index < 0 ? -index : 2 * (n - 1) - index;
    return signal[static_cast<std::size_t>(index)];
  };
  const int bins = half + 1;
  const int mels = config_.n_mels;
  int padded = frames;
  if (config_.pad_to > 0 && frames % config_.pad_to != 0)
    padded = frames + config_.pad_to - frames % config_.pad_to;
  NemoFeatures out;
  out.n_mels = mels;
  out.frames = frames;
  out.padded_frames = padded;
  out.values.assign(static_cast<std::size_t>(mels) * static_cast<std::size_t>(padded),
                    static_cast<float>(config_.pad_value));
  std::vector<double> frame(static_cast<std::size_t>(fft_size));
  std::vector<std::complex<double>> spectrum(static_cast<std::size_t>(bins));
  std::vector<std::complex<double>> scratch(static_cast<std::size_t>(half));
  std::vector<double> power(static_cast<std::size_t>(bins));
  std::vector<double> mel_log(static_cast<std::size_t>(mels) * static_cast<std::size_t>(frames));
  for (int t = 0; t < frames; ++t) {
    std::fill(frame.begin(), frame.end(), 0.0);
    // Frame t covers the centred signal's [t * hop, t * hop + n_fft): n_fft / 2 before sample 0.
    const std::int64_t first = static_cast<std::int64_t>(t) * hop - half + window_offset;
    for (int j = 0; j < win; ++j)
      frame[static_cast<std::size_t>(window_offset + j)] =
          sample_at(first + j) * window_[static_cast<std::size_t>(j)];
    fft_.forward(frame, spectrum, scratch);
    for (int k = 0; k < bins; ++k) {
      const double magnitude_squared = std::norm(spectrum[static_cast<std::size_t>(k)]);
      power[static_cast<std::size_t>(k)] =
          config_.mag_power == 2.0 ? magnitude_squared
                                   : std::pow(magnitude_squared, 0.5 * config_.mag_power);
    }
    for (int m = 0; m < mels; ++m) {
      const std::vector<float>& w = mel_weights_[static_cast<std::size_t>(m)];
      const auto [first_bin, end_bin] = mel_ranges_[static_cast<std::size_t>(m)];
      double energy = 0.0;
      for (int k = first_bin; k < end_bin; ++k)
        energy += static_cast<double>(w[static_cast<std::size_t>(k)]) *
                  power[static_cast<std::size_t>(k)];
      double value = energy;
      if (config_.log) {
        value = config_.log_guard == NemoLogGuard::kAdd
                    ? std::log(energy + config_.log_zero_guard_value)
                    : std::log(std::max(energy, config_.log_zero_guard_value));
      }
      mel_log[static_cast<std::size_t>(m) * frames + t] = value;
    }
  }
  // Normalisation over the utterance: NeMo's unbiased standard deviation plus 1e-5. A single
  // frame has no spread (NeMo's std would be NaN): its bins come out as 0 - the mean's own value.
  auto normalise = [&](std::size_t begin, std::size_t count, std::size_t stride) {
    double sum = 0.0;
    for (std::size_t i = 0; i < count; ++i) sum += mel_log[begin + i * stride];
    const double mean = sum / static_cast<double>(count);
    double squares = 0.0;
    for (std::size_t i = 0; i < count; ++i) {
      const double d = mel_log[begin + i * stride] - mean;
      squares += d * d;
    }
    const double std_dev = count > 1 ? std::sqrt(squares / static_cast<double>(count - 1)) : 0.0;
    for (std::size_t i = 0; i < count; ++i)
      mel_log[begin + i * stride] = (mel_log[begin + i * stride] - mean) / (std_dev + kStdGuard);
  };
  const auto frame_count = static_cast<std::size_t>(frames);
  if (config_.normalize == NemoNormalize::kPerFeature) {
    for (int m = 0; m < mels; ++m)
      normalise(static_cast<std::size_t>(m) * frame_count, frame_count, 1);
  } else if (config_.normalize == NemoNormalize::kAllFeatures) {
    normalise(0, mel_log.size(), 1);
  }
  for (int m = 0; m < mels; ++m) {
    for (int t = 0; t < frames; ++t) {
      out.values[static_cast<std::size_t>(m) * static_cast<std::size_t>(padded) +
                 static_cast<std::size_t>(t)] =
          static_cast<float>(
              mel_log[static_cast<std::size_t>(m) * frame_count + static_cast<std::size_t>(t)]);
    }
  }
  return out;
}

}  // namespace voxrt::audio
