#include "model_import/whisper_hf_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "decode/byte_level_bpe.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

Expected<nlohmann::json> read_json_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path, ": missing (a Hugging Face Whisper export has it)");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = nlohmann::json::parse(text.str(), nullptr, false);
  if (parsed.is_discarded()) return invalid_argument(path, ": not valid JSON");
  if (!parsed.is_object())
    return invalid_argument(path, ": expected a JSON object, found ", parsed.type_name());
  return parsed;
}

Expected<int> int_key(const nlohmann::json& j, const std::string& key, const std::string& path) {
  if (!j.contains(key)) return invalid_argument(path, ": key '", key, "' is missing");
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1 << 24))
    return invalid_argument(path, ": '", key, "' must be an integer 1..2^24, found ", v.dump());
  return v.get<int>();
}

Expected<int> token_key(const nlohmann::json& j, const std::string& key, int vocab_size,
                        const std::string& path) {
  if (!j.contains(key)) return invalid_argument(path, ": key '", key, "' is missing");
  const nlohmann::json& v = j[key];
  // eos_token_id may be a list in newer transformers; its first entry is the one.
  const nlohmann::json& id = v.is_array() && !v.empty() ? v[0] : v;
  if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= vocab_size)
    return invalid_argument(path, ": '", key, "' must be a token id 0..", vocab_size - 1,
                            ", found ", v.dump());
  return id.get<int>();
}

Expected<std::vector<int>> id_list(const nlohmann::json& j, const std::string& key, int vocab_size,
                                   const std::string& path) {
  std::vector<int> ids;
  if (!j.contains(key) || j[key].is_null()) return ids;
  const nlohmann::json& v = j[key];
  if (!v.is_array()) return invalid_argument(path, ": '", key, "' must be a list of token ids");
  for (const auto& id : v) {
    if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= vocab_size)
      return invalid_argument(path, ": '", key, "' holds ", id.dump(), ", not a token id 0..",
                              vocab_size - 1);
    ids.push_back(id.get<int>());
  }
  return ids;
}

}  // namespace

Expected<WhisperHfConfig> read_whisper_hf_config(const std::string& dir,
                                                 const std::string& language) {
  WhisperHfConfig out;
  stream::EncoderDecoderContract& c = out.contract;
  const std::string config_path = (fs::path(dir) / "config.json").string();
  VOXRT_ASSIGN_OR_RETURN(nlohmann::json config, read_json_object(config_path));
  VOXRT_ASSIGN_OR_RETURN(out.d_model, int_key(config, "d_model", config_path));
  VOXRT_ASSIGN_OR_RETURN(out.encoder_layers, int_key(config, "encoder_layers", config_path));
  VOXRT_ASSIGN_OR_RETURN(out.decoder_layers, int_key(config, "decoder_layers", config_path));
  VOXRT_ASSIGN_OR_RETURN(out.decoder_heads,
                         int_key(config, "decoder_attention_heads", config_path));
  VOXRT_ASSIGN_OR_RETURN(out.max_source_positions,
                         int_key(config, "max_source_positions", config_path));
  VOXRT_ASSIGN_OR_RETURN(c.mel_bins, int_key(config, "num_mel_bins", config_path));
  VOXRT_ASSIGN_OR_RETURN(c.vocab_size, int_key(config, "vocab_size", config_path));
  if (c.vocab_size > stream::EncoderDecoderContract::kMaxVocabSize) {
    return invalid_argument(config_path, ": vocab_size ", c.vocab_size, " is above ",
                            stream::EncoderDecoderContract::kMaxVocabSize);
  }
  VOXRT_ASSIGN_OR_RETURN(c.max_target_positions,
                         int_key(config, "max_target_positions", config_path));
  c.decoder_layers = out.decoder_layers;
  if (out.d_model % out.decoder_heads != 0) {
    return invalid_argument(config_path, ": d_model ", out.d_model,
                            " is not a multiple of decoder_attention_heads ", out.decoder_heads);
  }

  const std::string generation_path = (fs::path(dir) / "generation_config.json").string();
  VOXRT_ASSIGN_OR_RETURN(nlohmann::json generation, read_json_object(generation_path));
  VOXRT_ASSIGN_OR_RETURN(const int start, token_key(generation, "decoder_start_token_id",
                                                    c.vocab_size, generation_path));
  VOXRT_ASSIGN_OR_RETURN(c.eos_id,
                         token_key(generation, "eos_token_id", c.vocab_size, generation_path));
  VOXRT_ASSIGN_OR_RETURN(const int no_timestamps, token_key(generation, "no_timestamps_token_id",
                                                            c.vocab_size, generation_path));
  c.sot_id = start;
  c.no_timestamps_id = no_timestamps;
  const bool multilingual = generation.contains("lang_to_id") &&
                            generation["lang_to_id"].is_object() &&
                            !generation["lang_to_id"].empty();
  if (multilingual) {
    const nlohmann::json& languages = generation["lang_to_id"];
    for (const auto& [token, id] : languages.items()) {
      if (token.size() < 5 || !token.starts_with("<|") || !token.ends_with("|>")) {
        return invalid_argument(generation_path, ": lang_to_id key '", token,
                                "' is not a language token <|xx|>");
      }
      VOXRT_ASSIGN_OR_RETURN(const int language_id, token_key(languages, token, c.vocab_size,
                                                              generation_path + " lang_to_id"));
      c.languages.push_back({token.substr(2, token.size() - 4), language_id});
    }
    if (!language.empty()) {
      out.language_token = "<|" + language + "|>";
      if (!languages.contains(out.language_token)) {
        return invalid_argument(generation_path, ": lang_to_id has no '", out.language_token, "' (",
                                languages.size(), " languages)");
      }
      c.language_id = languages[out.language_token].get<int>();
    }
    if (!generation.contains("task_to_id") || !generation["task_to_id"].is_object()) {
      return invalid_argument(generation_path,
                              ": key 'task_to_id' is missing (a multilingual model needs "
                              "{\"transcribe\": id, ...})");
    }
    VOXRT_ASSIGN_OR_RETURN(c.task_id, token_key(generation["task_to_id"], "transcribe",
                                                c.vocab_size, generation_path + " task_to_id"));
    if (generation["task_to_id"].contains("translate")) {
      VOXRT_ASSIGN_OR_RETURN(c.translate_id,
                             token_key(generation["task_to_id"], "translate", c.vocab_size,
                                       generation_path + " task_to_id"));
    }
  }
  VOXRT_ASSIGN_OR_RETURN(c.suppress_tokens,
                         id_list(generation, "suppress_tokens", c.vocab_size, generation_path));
  VOXRT_ASSIGN_OR_RETURN(c.begin_suppress_tokens, id_list(generation, "begin_suppress_tokens",
                                                          c.vocab_size, generation_path));
  if (generation.contains("max_length") && generation["max_length"].is_number_integer()) {
    c.max_target_positions = std::min(c.max_target_positions, generation["max_length"].get<int>());
  }
  if (c.max_prompt_tokens() >= c.max_target_positions) {
    return invalid_argument(config_path, ": max_target_positions ", c.max_target_positions,
                            " leaves no room after a ", c.max_prompt_tokens(), "-token prompt");
  }

  // The tokenizer: vocab.json, with the special tokens from added_tokens.json or tokenizer.json.
  out.vocab_path = (fs::path(dir) / "vocab.json").string();
  if (!fs::exists(out.vocab_path))
    return not_found(out.vocab_path, ": missing (the GPT-2 byte-level BPE vocabulary)");
  for (const char* name : {"added_tokens.json", "tokenizer.json"}) {
    if (fs::exists(fs::path(dir) / name)) {
      out.added_tokens_path = (fs::path(dir) / name).string();
      break;
    }
  }
  VOXRT_ASSIGN_OR_RETURN(auto tokenizer, decode::ByteLevelBpeDecoder::from_files(
                                             out.vocab_path, out.added_tokens_path));
  std::vector<int> prompt_tokens = {c.sot_id, c.no_timestamps_id};
  if (c.multilingual()) prompt_tokens.push_back(c.task_id);
  if (c.translate_id >= 0) prompt_tokens.push_back(c.translate_id);
  for (const auto& l : c.languages) prompt_tokens.push_back(l.id);
  for (int id : prompt_tokens) {
    if (id >= tokenizer.size() || !tokenizer.is_special(id)) {
      return invalid_argument(generation_path, ": prompt token ", id, " is not a special token of ",
                              out.vocab_path,
                              out.added_tokens_path.empty() ? "" : " / " + out.added_tokens_path);
    }
  }
  if (tokenizer.size() > c.vocab_size) {
    return invalid_argument(out.vocab_path, ": ", tokenizer.size(),
                            " token ids, more than config.json's vocab_size ", c.vocab_size);
  }
  // Timestamp tokens: <|0.00|> and every id after it (Whisper's layout; transformers takes
  // no_timestamps_token_id + 1, which is the same token).
  c.timestamp_begin_id = tokenizer.id_of("<|0.00|>");
  if (c.timestamp_begin_id >= 0 && c.timestamp_begin_id <= c.eos_id) {
    return invalid_argument(out.vocab_path, ": <|0.00|> is id ", c.timestamp_begin_id,
                            ", expected after end-of-text ", c.eos_id,
                            " (timestamps are the last ids)");
  }
  for (const char* name : {"<|nospeech|>", "<|nocaptions|>"}) {
    if (tokenizer.id_of(name) >= 0) c.no_speech_id = tokenizer.id_of(name);
  }
  // Conditioning on previous text needs <|startofprev|> as a special token (not text).
  const int sot_prev = tokenizer.id_of("<|startofprev|>");
  if (sot_prev >= 0 && tokenizer.is_special(sot_prev)) c.sot_prev_id = sot_prev;
  if (c.max_prompt_tokens() >= c.max_target_positions) {
    return invalid_argument(config_path, ": max_target_positions ", c.max_target_positions,
                            " leaves no room after a ", c.max_prompt_tokens(),
                            "-token prompt (previous text included)");
  }
  if (fs::exists(fs::path(dir) / "merges.txt")) {
    out.merges_path = (fs::path(dir) / "merges.txt").string();
    c.merges_file = "merges.txt";
  }
  c.vocab_file = "vocab.json";
  c.added_tokens_file =
      out.added_tokens_path.empty() ? "" : fs::path(out.added_tokens_path).filename().string();
  return out;
}

}  // namespace voxrt::model_import
