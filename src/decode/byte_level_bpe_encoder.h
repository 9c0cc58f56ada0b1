// GPT-2's byte-level BPE encoding (Whisper's tokenizer), for text voxrt must feed a model (the
// initial prompt of stream/encoder_decoder/window_prompt.h): vocab.json (token -> id, in GPT-2's
// printable stand-ins for bytes) and merges.txt (one "a b" merge a line, the first the most
// preferred; a "#version" first line is skipped). The text is cut as GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// cuts it; each piece's bytes become stand-ins, then the lowest-ranked adjacent pair is merged
// until none is in merges.txt, and each symbol is looked up in vocab.json. Without a Unicode
// table, the classes are: letters (\p{L}) ASCII letters and every non-ASCII code point that is
// not whitespace; numbers (\p{N}) ASCII digits; whitespace (\s) ASCII's and Unicode's space
// separators. So non-ASCII digits and punctuation (e.g. "«", "。") are cut as letters: a
// difference from GPT-2 only for texts that hold them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::decode {

class ByteLevelBpeEncoder {
 public:
  // Errors name the file, the line and what was found.
  static Expected<ByteLevelBpeEncoder> from_files(const std::string& vocab_json,
                                                  const std::string& merges_txt);

  // The ids of `text` (UTF-8; malformed bytes are encoded as bytes); an error names a symbol
  // that vocab.json lacks.
  Expected<std::vector<int>> encode(const std::string& text) const;

  // GPT-2's pre-tokenization of `text` (the pieces, concatenated, are `text`).
  static std::vector<std::string> split(const std::string& text);

 private:
  std::map<std::string, int> ids_;
  std::map<std::pair<std::string, std::string>, int> merge_ranks_;
};

}  // namespace voxrt::decode
