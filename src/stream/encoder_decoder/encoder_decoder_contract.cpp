#include "stream/encoder_decoder/encoder_decoder_contract.h"

#include <charconv>
#include <cmath>

#include "stream/model_metadata.h"

namespace voxrt::stream {
namespace {

constexpr const char* kPrefix = "voxrt.encoder_decoder.";

std::string key(const char* name) {
  return std::string(kPrefix) + name;
}

std::string join_ids(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

Expected<std::vector<int>> parse_ids(const std::map<std::string, std::string>& metadata,
                                     const std::string& name, bool required, int vocab_size,
                                     const std::string& where) {
  std::vector<int> ids;
  auto it = metadata.find(name);
  if (it == metadata.end()) {
    if (required) return invalid_argument(where, ": key '", name, "' is missing");
    return ids;
  }
  const std::string& text = it->second;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    int value = -1;
    auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + comma, value);
    if (ec != std::errc() || ptr != text.data() + comma || value < 0 || value >= vocab_size) {
      return invalid_argument(where, ": '", name, "' must be token ids 0..", vocab_size - 1,
                              " separated by commas, found '", text, "'");
    }
    ids.push_back(value);
    start = comma + 1;
  }
  if (required && ids.empty()) return invalid_argument(where, ": '", name, "' is empty");
  return ids;
}

Expected<double> parse_double(const std::map<std::string, std::string>& metadata,
                              const std::string& name, double fallback, const std::string& where) {
  auto it = metadata.find(name);
  if (it == metadata.end()) return fallback;
  double value = 0;
  auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (ec != std::errc() || ptr != it->second.data() + it->second.size() || !std::isfinite(value))
    return invalid_argument(where, ": '", name, "' must be a number, found '", it->second, "'");
  return value;
}

Expected<int> one_id(const std::map<std::string, std::string>& metadata, const std::string& name,
                     bool required, int vocab_size, const std::string& where) {
  VOXRT_ASSIGN_OR_RETURN(auto ids, parse_ids(metadata, name, required, vocab_size, where));
  if (ids.size() > 1)
    return invalid_argument(where, ": '", name, "' must be one token id, found ", ids.size());
  return ids.empty() ? -1 : ids[0];
}

// "en:50259,de:50261".
Expected<std::vector<EncoderDecoderContract::Language>> parse_languages(
    const std::map<std::string, std::string>& metadata, int vocab_size, const std::string& where) {
  std::vector<EncoderDecoderContract::Language> languages;
  auto it = metadata.find(key("languages"));
  if (it == metadata.end()) return languages;
  const std::string& text = it->second;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const std::size_t colon = item.find(':');
    int id = -1;
    const char* digits = item.data() + (colon == std::string::npos ? 0 : colon + 1);
    auto [ptr, ec] = std::from_chars(digits, item.data() + item.size(), id);
    if (colon == std::string::npos || colon == 0 || ec != std::errc() ||
        ptr != item.data() + item.size() || id < 0 || id >= vocab_size) {
      return invalid_argument(where, ": '", key("languages"),
                              "' must be code:token_id pairs separated by commas (en:50259), "
                              "found '",
                              item, "'");
    }
    languages.push_back({item.substr(0, colon), id});
    start = comma + 1;
  }
  return languages;
}

// The prompt's tokens: sot_id, language_id, task_id, no_timestamps_id, timestamp_begin_id and
// languages; a bundle written before those keys has only `prompt` (<|startoftranscript|>
// [<|lang|> <|transcribe|>] <|notimestamps|>), which still reads as that fixed language without
// timestamps.
Status read_prompt_tokens(const std::map<std::string, std::string>& metadata,
                          EncoderDecoderContract& c, const std::string& where) {
  const int vocab = c.vocab_size;
  if (metadata.count(key("sot_id")) == 0 && metadata.count(key("prompt")) != 0) {
    VOXRT_ASSIGN_OR_RETURN(auto prompt, parse_ids(metadata, key("prompt"), true, vocab, where));
    if (prompt.size() != 2 && prompt.size() != 4) {
      return invalid_argument(where, ": '", key("prompt"), "' must be 2 or 4 token ids, found ",
                              prompt.size());
    }
    c.sot_id = prompt.front();
    c.no_timestamps_id = prompt.back();
    if (prompt.size() == 4) {
      c.language_id = prompt[1];
      c.task_id = prompt[2];
      c.languages = {{"", c.language_id}};
    }
    return Status::ok();
  }
  VOXRT_ASSIGN_OR_RETURN(c.sot_id, one_id(metadata, key("sot_id"), true, vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.no_timestamps_id,
                         one_id(metadata, key("no_timestamps_id"), true, vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.timestamp_begin_id,
                         one_id(metadata, key("timestamp_begin_id"), false, vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.languages, parse_languages(metadata, vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.language_id, one_id(metadata, key("language_id"), false, vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.task_id,
                         one_id(metadata, key("task_id"), c.multilingual(), vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.translate_id,
                         one_id(metadata, key("translate_id"), false, vocab, where));
  VOXRT_ASSIGN_OR_RETURN(c.sot_prev_id, one_id(metadata, key("sot_prev_id"), false, vocab, where));
  if (c.language_id >= 0 && c.language_code(c.language_id).empty() && c.multilingual()) {
    return invalid_argument(where, ": '", key("language_id"), "' ", c.language_id,
                            " is none of the languages in '", key("languages"), "'");
  }
  if (c.language_id >= 0 && !c.multilingual()) {
    return invalid_argument(where, ": '", key("language_id"), "' is set, but '", key("languages"),
                            "' is missing (an English-only model has none)");
  }
  return Status::ok();
}

}  // namespace

Expected<EncoderDecoderContract> EncoderDecoderContract::from_metadata(
    const std::map<std::string, std::string>& metadata, const std::string& where) {
  EncoderDecoderContract c;
  VOXRT_ASSIGN_OR_RETURN(c.mel_bins,
                         metadata_int(metadata, "voxrt.feature.num_bins", 80, false, where));
  VOXRT_ASSIGN_OR_RETURN(c.decoder_layers,
                         metadata_int(metadata, key("decoder_layers"), 0, true, where));
  VOXRT_ASSIGN_OR_RETURN(c.vocab_size, metadata_int(metadata, key("vocab_size"), 0, true, where));
  if (c.vocab_size > kMaxVocabSize) {
    return invalid_argument(where, ": '", key("vocab_size"), "' is ", c.vocab_size, ", above ",
                            kMaxVocabSize);
  }
  VOXRT_ASSIGN_OR_RETURN(c.max_target_positions,
                         metadata_int(metadata, key("max_target_positions"), 0, true, where));
  VOXRT_RETURN_IF_ERROR(read_prompt_tokens(metadata, c, where));
  if (c.max_prompt_tokens() >= c.max_target_positions) {
    return invalid_argument(where, ": a prompt of ", c.max_prompt_tokens(),
                            " tokens leaves no room under max_target_positions ",
                            c.max_target_positions);
  }
  VOXRT_ASSIGN_OR_RETURN(auto eos, parse_ids(metadata, key("eos_id"), true, c.vocab_size, where));
  if (eos.size() != 1) return invalid_argument(where, ": '", key("eos_id"), "' must be one id");
  c.eos_id = eos[0];
  VOXRT_ASSIGN_OR_RETURN(auto no_speech,
                         parse_ids(metadata, key("no_speech_id"), false, c.vocab_size, where));
  if (no_speech.size() > 1)
    return invalid_argument(where, ": '", key("no_speech_id"), "' must be one id");
  c.no_speech_id = no_speech.empty() ? -1 : no_speech[0];
  VOXRT_ASSIGN_OR_RETURN(c.no_speech_threshold,
                         parse_double(metadata, key("no_speech_threshold"), 0.6, where));
  VOXRT_ASSIGN_OR_RETURN(c.logprob_threshold,
                         parse_double(metadata, key("logprob_threshold"), -1.0, where));
  VOXRT_ASSIGN_OR_RETURN(c.suppress_tokens,
                         parse_ids(metadata, key("suppress_tokens"), false, c.vocab_size, where));
  VOXRT_ASSIGN_OR_RETURN(c.begin_suppress_tokens, parse_ids(metadata, key("begin_suppress_tokens"),
                                                            false, c.vocab_size, where));
  VOXRT_ASSIGN_OR_RETURN(c.vocab_file, metadata_string(metadata, key("vocab_file"), where));
  auto added = metadata.find(key("added_tokens_file"));
  if (added != metadata.end()) c.added_tokens_file = added->second;
  auto merges = metadata.find(key("merges_file"));
  if (merges != metadata.end()) c.merges_file = merges->second;
  return c;
}

std::string EncoderDecoderContract::language_code(int id) const {
  for (const Language& l : languages) {
    if (l.id == id) return l.code;
  }
  return "";
}

std::map<std::string, std::string> EncoderDecoderContract::to_metadata() const {
  std::map<std::string, std::string> m;
  m["voxrt.model_family"] = "encoder_decoder";
  m["voxrt.feature.type"] = "whisper_log_mel";
  m["voxrt.feature.num_bins"] = std::to_string(mel_bins);
  m[key("decoder_layers")] = std::to_string(decoder_layers);
  m[key("vocab_size")] = std::to_string(vocab_size);
  m[key("max_target_positions")] = std::to_string(max_target_positions);
  m[key("sot_id")] = std::to_string(sot_id);
  if (language_id >= 0) m[key("language_id")] = std::to_string(language_id);
  if (task_id >= 0) m[key("task_id")] = std::to_string(task_id);
  if (translate_id >= 0) m[key("translate_id")] = std::to_string(translate_id);
  if (sot_prev_id >= 0) m[key("sot_prev_id")] = std::to_string(sot_prev_id);
  m[key("no_timestamps_id")] = std::to_string(no_timestamps_id);
  if (timestamp_begin_id >= 0) m[key("timestamp_begin_id")] = std::to_string(timestamp_begin_id);
  if (!languages.empty()) {
    std::string text;
    for (const Language& l : languages)
      text += (text.empty() ? "" : ",") + l.code + ":" + std::to_string(l.id);
    m[key("languages")] = text;
  }
  m[key("eos_id")] = std::to_string(eos_id);
  if (no_speech_id >= 0) m[key("no_speech_id")] = std::to_string(no_speech_id);
  m[key("no_speech_threshold")] = std::to_string(no_speech_threshold);
  m[key("logprob_threshold")] = std::to_string(logprob_threshold);
  if (!suppress_tokens.empty()) m[key("suppress_tokens")] = join_ids(suppress_tokens);
  if (!begin_suppress_tokens.empty())
    m[key("begin_suppress_tokens")] = join_ids(begin_suppress_tokens);
  m[key("vocab_file")] = vocab_file;
  if (!added_tokens_file.empty()) m[key("added_tokens_file")] = added_tokens_file;
  if (!merges_file.empty()) m[key("merges_file")] = merges_file;
  return m;
}

}  // namespace voxrt::stream
