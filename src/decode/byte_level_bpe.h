// GPT-2's byte-level BPE as Hugging Face tokenizers store it (Whisper's tokenizer): vocab.json maps
// each token, spelled in GPT-2's printable stand-ins for bytes, to its id; the special tokens
// (<|endoftext|>, <|startoftranscript|>, languages, tasks, timestamps) come from
// added_tokens.json ({"<|en|>": 50259, ...}) or tokenizer.json's "added_tokens" list. Decoding
// only: ids -> bytes -> UTF-8 text, special tokens skipped (as decode(skip_special_tokens=True)),
// malformed UTF-8 replaced by U+FFFD (as Hugging Face's errors="replace").
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::decode {

class ByteLevelBpeDecoder {
 public:
  // `vocab_json`: vocab.json. `added_tokens_file`: added_tokens.json or tokenizer.json (whose
  // "added_tokens" entries are read); empty: only vocab.json's tokens. Errors name the file, the
  // key and what was found.
  static Expected<ByteLevelBpeDecoder> from_files(const std::string& vocab_json,
                                                  const std::string& added_tokens_file);

  // Ids 0 .. size() - 1 (gaps have an empty token).
  int size() const { return static_cast<int>(tokens_.size()); }
  // The token as stored (GPT-2's byte stand-ins, or the special token's text).
  const std::string& token(int id) const { return tokens_.at(static_cast<std::size_t>(id)); }
  bool is_special(int id) const { return special_.at(static_cast<std::size_t>(id)) != 0; }
  // -1 when absent.
  int id_of(const std::string& token) const;
  // Text of the non-special ids; ids out of range are an error.
  Expected<std::string> decode(std::span<const int> ids) const;

 private:
  std::vector<std::string> tokens_;
  // The bytes each non-special token stands for.
  std::vector<std::string> bytes_;
  std::vector<std::uint8_t> special_;
  std::map<std::string, int> ids_;
};

// GPT-2's table: byte -> the Unicode code point that spells it in vocab.json.
int gpt2_byte_to_code_point(std::uint8_t byte);

// `bytes` as UTF-8 with every malformed sequence replaced by U+FFFD: one for each maximal
// subpart (a lead byte with the continuation bytes that still fit it), as Python's
// bytes.decode(errors="replace") does, so texts match Hugging Face's decode byte for byte.
std::string utf8_with_replacements(const std::string& bytes);

}  // namespace voxrt::decode
