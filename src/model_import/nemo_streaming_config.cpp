#include "model_import/nemo_streaming_config.h"

#include <cmath>

#include "audio/nemo_log_mel.h"
#include "model_import/nemo_export_config.h"

namespace voxrt::model_import {
namespace {

Expected<int> config_int(const YamlNode* encoder, const std::string& key, const std::string& file,
                         std::optional<int> fallback) {
  const YamlNode* node = encoder->get(key);
  if (node == nullptr || node->is_null()) {
    if (fallback) return *fallback;
    return invalid_argument(file, ": expected encoder.", key, " (NeMo's ConformerEncoder), found ",
                            node == nullptr ? "no such key" : "null");
  }
  VOXRT_ASSIGN_OR_RETURN(const double value, yaml_number(node, "encoder." + key, file, 0));
  if (value != static_cast<int>(value))
    return invalid_argument(file, ": encoder.", key, ": expected an integer, found ", value);
  return static_cast<int>(value);
}

// A flow or block list of two integers.
Expected<std::array<int, 2>> int_pair(const YamlNode* node, const std::string& key,
                                      const std::string& file) {
  if (node == nullptr || node->kind != YamlNode::Kind::kList || node->list.size() != 2) {
    return invalid_argument(file, ": ", key, ": expected a list of two integers, found ",
                            node == nullptr ? "nothing" : "another value");
  }
  std::array<int, 2> out{};
  for (std::size_t i = 0; i < 2; ++i) {
    VOXRT_ASSIGN_OR_RETURN(const double v, yaml_number(node->list[i].get(), key, file, 0));
    out[i] = static_cast<int>(v);
  }
  return out;
}

}  // namespace

Expected<NemoCacheAwareSizes> nemo_cache_aware_sizes_from_config(const YamlNode& root,
                                                                 const std::string& file) {
  const YamlNode* encoder = root.get("encoder");
  if (encoder == nullptr || encoder->kind != YamlNode::Kind::kMap)
    return invalid_argument(file, ": expected an 'encoder' section, found none");
  const std::string target = yaml_text(encoder->get("_target_"), "");
  if (target.find("ConformerEncoder") == std::string::npos) {
    return unsupported(file, ": encoder._target_ '", target,
                       "': expected NeMo's ConformerEncoder (the cache-aware FastConformer)");
  }
  const std::string style = yaml_text(encoder->get("att_context_style"), "regular");
  if (style != "chunked_limited") {
    return unsupported(file, ": encoder.att_context_style '", style,
                       "': expected chunked_limited (NeMo's cache-aware streaming models; regular "
                       "attention drops cache frames per chunk, which is not imported)");
  }
  // att_context_size: [left, right], or a list of them (multi-lookahead models), whose first is
  // NeMo's default and the one the export uses.
  const YamlNode* context = encoder->get("att_context_size");
  if (context != nullptr && context->kind == YamlNode::Kind::kList && !context->list.empty() &&
      context->list[0]->kind == YamlNode::Kind::kList) {
    context = context->list[0].get();
  }
  VOXRT_ASSIGN_OR_RETURN(const auto att, int_pair(context, "encoder.att_context_size", file));
  if (att[0] < 0 || att[1] < 0) {
    return unsupported(file, ": encoder.att_context_size [", att[0], ", ", att[1],
                       "]: expected a limited left context and a lookahead >= 0 (an unlimited "
                       "context cannot be cached)");
  }
  const std::string subsampling = yaml_text(encoder->get("subsampling"), "striding");
  if (subsampling != "dw_striding" && subsampling != "striding") {
    return unsupported(file, ": encoder.subsampling '", subsampling,
                       "': expected dw_striding or striding (ConvSubsampling, whose streaming "
                       "sizes NeMo's setup_streaming_params uses)");
  }
  if (!yaml_bool(encoder->get("causal_downsampling"), false)) {
    return unsupported(file,
                       ": encoder.causal_downsampling: expected true (NeMo's cache-aware models; "
                       "voxrt counts a chunk's output frames by the causal length rule), found ",
                       yaml_text(encoder->get("causal_downsampling"), "absent"));
  }
  NemoCacheAwareSizes s;
  s.source = file;
  VOXRT_ASSIGN_OR_RETURN(s.subsampling, config_int(encoder, "subsampling_factor", file, 4));
  VOXRT_ASSIGN_OR_RETURN(const int layers, config_int(encoder, "n_layers", file, std::nullopt));
  VOXRT_ASSIGN_OR_RETURN(const int d_model, config_int(encoder, "d_model", file, std::nullopt));
  VOXRT_ASSIGN_OR_RETURN(const int kernel, config_int(encoder, "conv_kernel_size", file, 31));
  const YamlNode* conv = encoder->get("conv_context_size");
  int conv_cache = 0;
  if (conv != nullptr && conv->kind == YamlNode::Kind::kScalar && conv->scalar == "causal") {
    conv_cache = kernel - 1;
  } else if (conv != nullptr && conv->kind == YamlNode::Kind::kList) {
    VOXRT_ASSIGN_OR_RETURN(const auto pair, int_pair(conv, "encoder.conv_context_size", file));
    if (pair[1] != 0 || pair[0] + pair[1] + 1 != kernel) {
      return unsupported(file, ": encoder.conv_context_size [", pair[0], ", ", pair[1],
                         "]: expected [conv_kernel_size - 1, 0] = [", kernel - 1,
                         ", 0] (a causal convolution; a right context cannot be cached)");
    }
    conv_cache = pair[0];
  } else {
    return unsupported(file,
                       ": encoder.conv_context_size: expected causal or [kernel - 1, 0] (a "
                       "symmetric convolution, NeMo's default, cannot stream with caches), found ",
                       conv == nullptr ? "absent" : yaml_text(conv, "null"));
  }
  s.chunk_frames = s.subsampling * (1 + att[1]);
  s.window_frames = s.chunk_frames + s.subsampling + 1;
  s.cache_last_channel_dims = {layers, att[0], d_model};
  s.cache_last_time_dims = {layers, d_model, conv_cache};
  return s;
}

// The streaming front end (nemo_log_mel) computes NeMo's defaults only: every preprocessor
// setting must be one of them. Errors name the key with the expected and found values.
Status check_nemo_streaming_front_end(const audio::NemoFeatureConfig& c, int graph_mels,
                                      const std::string& config_file,
                                      const std::string& model_file) {
  auto differs = [](double a, double b) { return std::abs(a - b) > 1e-9 * std::max(1.0, b); };
  struct Check {
    const char* key;
    double found;
    double expected;
  };
  const Check checks[] = {
      {"sample_rate", static_cast<double>(c.sample_rate_hz), 16000.0},
      {"window_size", c.window_size_s, 0.025},
      {"window_stride", c.window_stride_s, 0.01},
      {"n_fft", static_cast<double>(c.fft_size()), 512.0},
      {"preemph", c.preemphasis, 0.97},
      {"log_zero_guard_value", c.log_zero_guard_value, audio::kNemoLogZeroGuard},
      {"lowfreq", c.low_freq_hz, 0.0},
      {"mag_power", c.mag_power, 2.0},
      {"pad_to", static_cast<double>(c.pad_to), 0.0},
  };
  for (const Check& k : checks) {
    if (differs(k.found, k.expected)) {
      return unsupported(config_file, ": preprocessor.", k.key, " is ", k.found,
                         "; the streaming NeMo front end (nemo_log_mel) computes ", k.expected,
                         " only");
    }
  }
  if (c.high_freq_hz != 0.0 && differs(c.high_freq_hz, c.sample_rate_hz / 2.0)) {
    return unsupported(config_file, ": preprocessor.highfreq is ", c.high_freq_hz,
                       "; the streaming front end's mel bins end at Nyquist (null or ",
                       c.sample_rate_hz / 2, ")");
  }
  if (!c.log || c.log_guard != audio::NemoLogGuard::kAdd || !c.mel_norm_slaney) {
    return unsupported(config_file,
                       ": preprocessor log / log_zero_guard_type / mel_norm: expected true, add, "
                       "slaney (the streaming front end's)");
  }
  if (c.normalize != audio::NemoNormalize::kNone) {
    return unsupported(config_file, ": preprocessor.normalize '",
                       audio::nemo_normalize_name(c.normalize),
                       "': expected NA (a cache-aware streaming model must be trained without "
                       "per-utterance normalisation)");
  }
  if (c.n_mels != graph_mels) {
    return invalid_argument(model_file, ": audio_signal has ", graph_mels, " mel bins but ",
                            config_file, " preprocessor.features is ", c.n_mels);
  }
  return Status::ok();
}

}  // namespace voxrt::model_import
