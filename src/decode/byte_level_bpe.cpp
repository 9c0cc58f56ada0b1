#include "decode/byte_level_bpe.h"

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace voxrt::decode {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves; the others (controls,
// space, 0x7F-0xA0, 0xAD) are moved to 256 + n in byte order.
const std::array<int, 256>& byte_table() {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int moved = 0;
    for (int b = 0; b < 256; ++b) t[b] = printable(b) ? b : 256 + moved++;
    return t;
  }();
  return table;
}

// Code point -> byte for the 256 stand-ins; -1 elsewhere.
int code_point_to_byte(std::uint32_t code_point) {
  static const std::array<int, 512> inverse = [] {
    std::array<int, 512> inv{};
    inv.fill(-1);
    for (int b = 0; b < 256; ++b) inv[static_cast<std::size_t>(byte_table()[b])] = b;
    return inv;
  }();
  return code_point < inverse.size() ? inverse[code_point] : -1;
}

// Reads one UTF-8 sequence at `at`; returns its length (0 when malformed) and the code point.
std::size_t utf8_sequence(const std::string& s, std::size_t at, std::uint32_t& code_point) {
  const auto lead = static_cast<unsigned char>(s[at]);
  std::size_t length = 0;
  std::uint32_t min_value = 0;
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code_point = lead & 0x1F;
    min_value = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code_point = lead & 0x0F;
    min_value = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code_point = lead & 0x07;
    min_value = 0x10000;
  } else {
    return 0;
  }
  if (at + length > s.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    const auto c = static_cast<unsigned char>(s[at + i]);
    if ((c & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (c & 0x3F);
  }
  if (code_point < min_value || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF))
    return 0;
  return length;
}

Expected<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path, ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = nlohmann::json::parse(text.str(), nullptr, false);
  if (parsed.is_discarded()) return invalid_argument(path, ": not valid JSON");
  return parsed;
}

}  // namespace

int gpt2_byte_to_code_point(std::uint8_t byte) {
  return byte_table()[byte];
}

namespace {

// The bytes at `at` that start a well-formed sequence but do not finish it (at least 1): the
// "maximal subpart" one U+FFFD replaces, as Python's bytes.decode(errors="replace") (which
// Hugging Face's tokenizers use) and WHATWG decoders do.
std::size_t malformed_length(const std::string& s, std::size_t at) {
  const auto lead = static_cast<unsigned char>(s[at]);
  std::size_t length = 0;
  unsigned char low = 0x80;  // the second byte's range; later bytes are 80..BF
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 1;
  }
  std::size_t i = 1;
  for (; i < length && at + i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[at + i]);
    if (c < (i == 1 ? low : 0x80) || c > (i == 1 ? high : 0xBF)) break;
  }
  return i;
}

}  // namespace

std::string utf8_with_replacements(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t at = 0; at < bytes.size();) {
    std::uint32_t code_point = 0;
    const std::size_t length = utf8_sequence(bytes, at, code_point);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      at += malformed_length(bytes, at);
      continue;
    }
    out.append(bytes, at, length);
    at += length;
  }
  return out;
}

Expected<ByteLevelBpeDecoder> ByteLevelBpeDecoder::from_files(
    const std::string& vocab_json, const std::string& added_tokens_file) {
  VOXRT_ASSIGN_OR_RETURN(nlohmann::json vocab, read_json(vocab_json));
  if (!vocab.is_object() || vocab.empty()) {
    return invalid_argument(vocab_json, ": expected an object mapping tokens to ids, found a JSON ",
                            vocab.type_name());
  }
  std::map<int, std::pair<std::string, bool>> by_id;
  auto add = [&](const std::string& token, const nlohmann::json& id, bool special,
                 const std::string& where) -> Status {
    // 2^20 ids: 20 times Whisper's 51865, and a bound on what a bad file makes us allocate.
    if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= (1 << 20)) {
      return invalid_argument(where, ": token '", token, "' must map to an id 0..2^20-1, found ",
                              id.dump());
    }
    const int value = id.get<int>();
    auto [it, inserted] = by_id.emplace(value, std::make_pair(token, special));
    if (!inserted && it->second.first != token) {
      return invalid_argument(where, ": id ", value, " is both '", it->second.first, "' and '",
                              token, "'");
    }
    if (special) it->second.second = true;
    return Status::ok();
  };
  for (const auto& [token, id] : vocab.items()) {
    VOXRT_RETURN_IF_ERROR(add(token, id, false, vocab_json));
  }
  if (!added_tokens_file.empty()) {
    VOXRT_ASSIGN_OR_RETURN(nlohmann::json added, read_json(added_tokens_file));
    if (added.is_object() && added.contains("added_tokens")) {
      // tokenizer.json: [{"id": 50257, "content": "<|endoftext|>", "special": true}, ...]
      const nlohmann::json& list = added["added_tokens"];
      if (!list.is_array()) {
        return invalid_argument(added_tokens_file, ": key 'added_tokens' must be a list, found ",
                                list.type_name());
      }
      for (std::size_t i = 0; i < list.size(); ++i) {
        const nlohmann::json& entry = list[i];
        const std::string where = str_cat(added_tokens_file, ": added_tokens[", i, "]");
        if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() ||
            !entry.contains("id")) {
          return invalid_argument(where, ": expected {\"id\": N, \"content\": \"...\"}, found ",
                                  entry.dump());
        }
        VOXRT_RETURN_IF_ERROR(add(entry["content"].get<std::string>(), entry["id"], true, where));
      }
    } else if (added.is_object()) {
      // added_tokens.json: {"<|endoftext|>": 50257, ...}
      for (const auto& [token, id] : added.items()) {
        VOXRT_RETURN_IF_ERROR(add(token, id, true, added_tokens_file));
      }
    } else {
      return invalid_argument(added_tokens_file,
                              ": expected added_tokens.json (an object of token: id) or "
                              "tokenizer.json (with 'added_tokens'), found a JSON ",
                              added.type_name());
    }
  }
  ByteLevelBpeDecoder decoder;
  const int size = by_id.rbegin()->first + 1;
  decoder.tokens_.assign(static_cast<std::size_t>(size), "");
  decoder.bytes_.assign(static_cast<std::size_t>(size), "");
  decoder.special_.assign(static_cast<std::size_t>(size), 0);
  for (const auto& [id, entry] : by_id) {
    const auto& [token, special] = entry;
    const auto index = static_cast<std::size_t>(id);
    decoder.tokens_[index] = token;
    decoder.ids_[token] = id;
    // GPT-2 keeps <|endoftext|> in vocab.json; Whisper's special tokens all look like <|...|>.
    const bool looks_special =
        token.size() >= 4 && token.starts_with("<|") && token.ends_with("|>");
    decoder.special_[index] = special || looks_special ? 1 : 0;
    if (decoder.special_[index]) continue;
    std::string bytes;
    for (std::size_t at = 0; at < token.size();) {
      std::uint32_t code_point = 0;
      const std::size_t length = utf8_sequence(token, at, code_point);
      const int byte = length == 0 ? -1 : code_point_to_byte(code_point);
      if (byte < 0) {
        return invalid_argument(vocab_json, ": token '", token, "' (id ", id,
                                ") is not spelled in GPT-2's byte-level alphabet (at byte ", at,
                                ")");
      }
      bytes.push_back(static_cast<char>(byte));
      at += length;
    }
    decoder.bytes_[index] = std::move(bytes);
  }
  return decoder;
}

int ByteLevelBpeDecoder::id_of(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

Expected<std::string> ByteLevelBpeDecoder::decode(std::span<const int> ids) const {
  std::string bytes;
  for (int id : ids) {
    if (id < 0 || id >= size())
      return invalid_argument("token id ", id, " is outside the vocabulary (0..", size() - 1, ")");
    if (!special_[static_cast<std::size_t>(id)]) bytes += bytes_[static_cast<std::size_t>(id)];
  }
  return utf8_with_replacements(bytes);
}

}  // namespace voxrt::decode
