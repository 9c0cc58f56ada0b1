#include "decode/byte_level_bpe_encoder.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "decode/byte_level_bpe.h"

namespace voxrt::decode {
namespace {

enum class CharClass { kLetter, kNumber, kSpace, kOther };

struct Char {
  std::size_t offset = 0;  // in bytes
  std::size_t bytes = 1;
  CharClass kind = CharClass::kOther;
  std::uint32_t code_point = 0;
};

CharClass classify(std::uint32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CharClass::kLetter;
  if (cp >= '0' && cp <= '9') return CharClass::kNumber;
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
      cp == 0x1F || cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
      cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
    return CharClass::kSpace;
  if (cp >= 0x80) return CharClass::kLetter;
  return CharClass::kOther;
}

// The characters of `text`; a malformed byte is one character of class kOther.
std::vector<Char> characters(const std::string& text) {
  std::vector<Char> out;
  for (std::size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = lead < 0x80             ? 1
                         : (lead & 0xE0) == 0xC0 ? 2
                         : (lead & 0xF0) == 0xE0 ? 3
                         : (lead & 0xF8) == 0xF0 ? 4
                                                 : 0;
    std::uint32_t cp = length == 1   ? lead
                       : length == 2 ? (lead & 0x1Fu)
                       : length == 3 ? (lead & 0x0Fu)
                                     : (lead & 0x07u);
    bool ok = length > 0 && at + length <= text.size();
    for (std::size_t k = 1; ok && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[at + k]);
      ok = (next & 0xC0) == 0x80;
      cp = (cp << 6) | (next & 0x3Fu);
    }
    if (!ok) {
      out.push_back({at, 1, CharClass::kOther, lead});
      ++at;
      continue;
    }
    out.push_back({at, length, classify(cp), cp});
    at += length;
  }
  return out;
}

}  // namespace

std::vector<std::string> ByteLevelBpeEncoder::split(const std::string& text) {
  const std::vector<Char> chars = characters(text);
  std::vector<std::string> pieces;
  const std::size_t n = chars.size();
  auto is = [&](std::size_t i, CharClass k) { return i < n && chars[i].kind == k; };
  auto piece = [&](std::size_t first, std::size_t end) {
    const std::size_t from = chars[first].offset;
    const std::size_t to = end < n ? chars[end].offset : text.size();
    pieces.push_back(text.substr(from, to - from));
  };
  for (std::size_t i = 0; i < n;) {
    // 's|'t|'re|'ve|'m|'ll|'d
    if (chars[i].code_point == '\'' && chars[i].bytes == 1) {
      std::size_t length = 0;
      for (const char* c : {"s", "t", "re", "ve", "m", "ll", "d"}) {
        const std::string suffix(c);
        if (text.compare(chars[i].offset + 1, suffix.size(), suffix) == 0) {
          length = 1 + suffix.size();
          break;
        }
      }
      if (length > 0) {
        piece(i, i + length);
        i += length;
        continue;
      }
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
    const std::size_t start = i + (chars[i].code_point == ' ' && chars[i].bytes == 1 ? 1 : 0);
    bool matched = false;
    for (CharClass k : {CharClass::kLetter, CharClass::kNumber, CharClass::kOther}) {
      if (!is(start, k)) continue;
      std::size_t end = start;
      while (is(end, k)) ++end;
      piece(i, end);
      i = end;
      matched = true;
      break;
    }
    if (matched) continue;
    // \s+(?!\S) | \s+ : a run of spaces leaves its last to the word after it.
    std::size_t end = i;
    while (is(end, CharClass::kSpace)) ++end;
    if (end == i) end = i + 1;  // unreachable: every class is covered above
    if (end < n && end - i >= 2) --end;
    piece(i, end);
    i = end;
  }
  return pieces;
}

Expected<ByteLevelBpeEncoder> ByteLevelBpeEncoder::from_files(const std::string& vocab_json,
                                                              const std::string& merges_txt) {
  ByteLevelBpeEncoder e;
  std::ifstream vocab_in(vocab_json);
  if (!vocab_in) return not_found(vocab_json, ": cannot open (the BPE vocabulary)");
  const auto vocab = nlohmann::json::parse(vocab_in, nullptr, false);
  if (vocab.is_discarded() || !vocab.is_object())
    return invalid_argument(vocab_json, ": expected a JSON object {token: id}");
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer())
      return invalid_argument(vocab_json, ": the id of '", token, "' is ", id.dump(),
                              ", expected an integer");
    e.ids_[token] = id.get<int>();
  }
  std::ifstream merges_in(merges_txt);
  if (!merges_in) return not_found(merges_txt, ": cannot open (the BPE merges, merges.txt)");
  int rank = 0;
  int line_number = 0;
  for (std::string line; std::getline(merges_in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      return invalid_argument(merges_txt, ":", line_number,
                              ": expected two symbols \"a b\", found '", line, "'");
    }
    e.merge_ranks_.emplace(std::make_pair(line.substr(0, space), line.substr(space + 1)), rank++);
  }
  return e;
}

Expected<std::vector<int>> ByteLevelBpeEncoder::encode(const std::string& text) const {
  std::vector<int> ids;
  for (const std::string& piece : split(text)) {
    // Each byte as its stand-in (a code point below 512: one or two UTF-8 bytes).
    std::vector<std::string> symbols;
    for (const char byte : piece) {
      const int cp = gpt2_byte_to_code_point(static_cast<std::uint8_t>(byte));
      std::string s;
      if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
      } else {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
      symbols.push_back(std::move(s));
    }
    while (symbols.size() > 1) {
      int best_rank = std::numeric_limits<int>::max();
      for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
        const auto it = merge_ranks_.find({symbols[k], symbols[k + 1]});
        if (it != merge_ranks_.end() && it->second < best_rank) best_rank = it->second;
      }
      if (best_rank == std::numeric_limits<int>::max()) break;
      std::vector<std::string> merged;
      for (std::size_t k = 0; k < symbols.size(); ++k) {
        if (k + 1 < symbols.size()) {
          const auto it = merge_ranks_.find({symbols[k], symbols[k + 1]});
          if (it != merge_ranks_.end() && it->second == best_rank) {
            merged.push_back(symbols[k] + symbols[k + 1]);
            ++k;
            continue;
          }
        }
        merged.push_back(symbols[k]);
      }
      symbols = std::move(merged);
    }
    for (const std::string& symbol : symbols) {
      const auto it = ids_.find(symbol);
      if (it == ids_.end())
        return invalid_argument("BPE: symbol '", symbol, "' of '", piece,
                                "' is not in the vocabulary");
      ids.push_back(it->second);
    }
  }
  return ids;
}

}  // namespace voxrt::decode
