#include "model_import/nemo_export_config.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "model_import/sentencepiece_pieces.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

Expected<double> yaml_number(const YamlNode* node, const std::string& key, const std::string& file,
                             double fallback) {
  if (node == nullptr || node->is_null()) return fallback;
  if (node->kind != YamlNode::Kind::kScalar)
    return invalid_argument(file, ": ", key, " must be a number");
  try {
    std::size_t used = 0;
    const double v = std::stod(node->scalar, &used);
    if (used != node->scalar.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (...) {
    return invalid_argument(file, ": ", key, ": expected a number, found '", node->scalar, "'");
  }
}

std::string yaml_text(const YamlNode* node, const std::string& fallback) {
  if (node == nullptr || node->is_null() || node->kind != YamlNode::Kind::kScalar) return fallback;
  return node->scalar;
}

bool yaml_bool(const YamlNode* node, bool fallback) {
  const std::string t = yaml_text(node, fallback ? "true" : "false");
  return t == "true" || t == "True" || t == "1";
}

Expected<audio::NemoFeatureConfig> nemo_front_end_from_config(const YamlNode& root,
                                                              const std::string& file) {
  const YamlNode* p = root.get("preprocessor");
  if (p == nullptr || p->kind != YamlNode::Kind::kMap)
    return invalid_argument(file, ": no 'preprocessor' section");
  const std::string target = yaml_text(p->get("_target_"), "");
  if (!target.empty() && target.find("AudioToMelSpectrogramPreprocessor") == std::string::npos) {
    return unsupported(file, ": preprocessor._target_ '", target,
                       "': only AudioToMelSpectrogramPreprocessor is supported");
  }
  audio::NemoFeatureConfig c;
  auto num = [&](const char* key, double fallback) {
    return yaml_number(p->get(key), std::string("preprocessor.") + key, file, fallback);
  };
  VOXRT_ASSIGN_OR_RETURN(const double rate, num("sample_rate", 16000));
  c.sample_rate_hz = static_cast<int>(rate);
  VOXRT_ASSIGN_OR_RETURN(c.window_size_s, num("window_size", 0.02));
  VOXRT_ASSIGN_OR_RETURN(c.window_stride_s, num("window_stride", 0.01));
  VOXRT_ASSIGN_OR_RETURN(const double n_fft, num("n_fft", 0));
  c.n_fft = static_cast<int>(n_fft);
  const YamlNode* mels = p->get("features") != nullptr ? p->get("features") : p->get("nfilt");
  VOXRT_ASSIGN_OR_RETURN(const double n_mels, yaml_number(mels, "preprocessor.features", file, 64));
  c.n_mels = static_cast<int>(n_mels);
  VOXRT_ASSIGN_OR_RETURN(c.preemphasis, num("preemph", 0.97));
  if (p->get("preemph") != nullptr && p->get("preemph")->is_null()) c.preemphasis = 0.0;
  c.log = yaml_bool(p->get("log"), true);
  const std::string guard_type = yaml_text(p->get("log_zero_guard_type"), "add");
  if (guard_type != "add" && guard_type != "clamp")
    return invalid_argument(file, ": preprocessor.log_zero_guard_type '", guard_type,
                            "': expected add or clamp");
  c.log_guard = guard_type == "add" ? audio::NemoLogGuard::kAdd : audio::NemoLogGuard::kClamp;
  const std::string guard = yaml_text(p->get("log_zero_guard_value"), "");
  if (guard == "tiny") {
    c.log_zero_guard_value = std::numeric_limits<float>::min();
  } else if (guard == "eps") {
    c.log_zero_guard_value = std::numeric_limits<float>::epsilon();
  } else {
    VOXRT_ASSIGN_OR_RETURN(c.log_zero_guard_value, num("log_zero_guard_value", 1.0 / 16777216.0));
  }
  VOXRT_ASSIGN_OR_RETURN(c.low_freq_hz, num("lowfreq", 0));
  VOXRT_ASSIGN_OR_RETURN(c.high_freq_hz, num("highfreq", 0));
  VOXRT_ASSIGN_OR_RETURN(c.mag_power, num("mag_power", 2.0));
  const YamlNode* mel_norm = p->get("mel_norm");
  c.mel_norm_slaney = mel_norm == nullptr || yaml_text(mel_norm, "") == "slaney";
  VOXRT_ASSIGN_OR_RETURN(
      c.normalize, audio::nemo_normalize_from_name(yaml_text(p->get("normalize"), "per_feature")));
  const std::string pad_to = yaml_text(p->get("pad_to"), "16");
  if (pad_to == "max")
    return unsupported(file,
                       ": preprocessor.pad_to 'max' (padding to max_duration) is not supported");
  VOXRT_ASSIGN_OR_RETURN(const double pad, num("pad_to", 16));
  c.pad_to = static_cast<int>(pad);
  VOXRT_ASSIGN_OR_RETURN(c.pad_value, num("pad_value", 0));
  const std::string window = yaml_text(p->get("window"), "hann");
  if (window != "hann")
    return unsupported(file, ": preprocessor.window '", window, "': only hann is supported");
  VOXRT_ASSIGN_OR_RETURN(const double splicing, num("frame_splicing", 1));
  if (splicing != 1)
    return unsupported(file, ": preprocessor.frame_splicing ", splicing, " (only 1 is supported)");
  if (yaml_bool(p->get("exact_pad"), false))
    return unsupported(file, ": preprocessor.exact_pad true is not supported");
  VOXRT_RETURN_IF_ERROR(c.validate().with_context(file));
  return c;
}

namespace {

// The .nemo archive stores artifacts as <hash>_<name> and model_config.yaml points at them as
// "nemo:<hash>_<name>".
std::string artifact_path(const std::string& dir, const std::string& reference) {
  std::string name = reference.starts_with("nemo:") ? reference.substr(5) : reference;
  name = fs::path(name).filename().string();
  return (fs::path(dir) / name).string();
}

// SentencePiece's text vocabulary (<piece>\t<score> per line, in id order).
Expected<std::vector<std::string>> read_spe_vocab(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(path, ": cannot read the SentencePiece vocabulary");
  std::vector<std::string> pieces;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) {
      return invalid_argument(path, ":", number, ": expected '<piece>\\t<score>', found '", line,
                              "'");
    }
    pieces.push_back(line.substr(0, tab));
  }
  if (pieces.empty()) return invalid_argument(path, ": no pieces");
  return pieces;
}

}  // namespace

Expected<NemoVocabulary> nemo_vocabulary_from_config(const std::string& dir, const YamlNode& root,
                                                     const std::string& config_file) {
  NemoVocabulary v;
  // Character models (EncDecCTCModel) list their labels in the decoder's config.
  for (const char* key : {"decoder.vocabulary", "labels"}) {
    const YamlNode* labels = root.at(key);
    if (labels != nullptr && labels->kind == YamlNode::Kind::kList && !labels->list.empty()) {
      for (const auto& item : labels->list) {
        if (item->kind != YamlNode::Kind::kScalar)
          return invalid_argument(config_file, ": ", key, " holds a non-scalar item");
        v.units.push_back(item->scalar);
      }
      v.unit_type = "char";
      v.source = config_file + ":" + key;
      return v;
    }
  }
  // BPE models (EncDecCTCModelBPE): the SentencePiece tokenizer's piece list in id order.
  const YamlNode* tokenizer = root.get("tokenizer");
  std::string vocab_file;
  if (tokenizer != nullptr) {
    const std::string named = yaml_text(tokenizer->get("spe_tokenizer_vocab"), "");
    if (!named.empty()) vocab_file = artifact_path(dir, named);
    const std::string type = yaml_text(tokenizer->get("type"), "bpe");
    if (type != "bpe") {
      return unsupported(config_file, ": tokenizer.type '", type,
                         "': only SentencePiece (bpe) tokenizers and character labels are "
                         "supported");
    }
  }
  if (vocab_file.empty() || !fs::exists(vocab_file)) {
    auto found = find_one_file(dir, "", "tokenizer.vocab", "SentencePiece vocabulary");
    if (!found) {
      // Without the text vocabulary: the SentencePiece model's pieces, in the same id order.
      std::string model_file;
      if (tokenizer != nullptr) {
        const std::string named = yaml_text(tokenizer->get("model_path"), "");
        if (!named.empty() && fs::exists(artifact_path(dir, named)))
          model_file = artifact_path(dir, named);
      }
      if (model_file.empty() && has_file(dir, "", "tokenizer.model")) {
        VOXRT_ASSIGN_OR_RETURN(model_file,
                               find_one_file(dir, "", "tokenizer.model", "SentencePiece model"));
      }
      if (model_file.empty()) {
        return not_found(dir, ": no character labels (decoder.vocabulary) in ", config_file,
                         " and no SentencePiece vocabulary (*tokenizer.vocab",
                         vocab_file.empty() ? "" : ", or " + vocab_file,
                         ") or model (tokenizer.model_path, *tokenizer.model)");
      }
      VOXRT_ASSIGN_OR_RETURN(const auto pieces, read_sentencepiece_pieces(model_file));
      if (pieces.empty()) return invalid_argument(model_file, ": no pieces");
      for (const SentencePiece& p : pieces) v.units.push_back(p.piece);
      v.unit_type = "pieces";
      v.source = fs::path(model_file).filename().string();
      return v;
    }
    vocab_file = *found;
  }
  VOXRT_ASSIGN_OR_RETURN(v.units, read_spe_vocab(vocab_file));
  v.unit_type = "pieces";
  v.source = fs::path(vocab_file).filename().string();
  return v;
}

}  // namespace voxrt::model_import
