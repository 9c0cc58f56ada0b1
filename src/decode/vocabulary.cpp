#include "decode/vocabulary.h"

#include <sentencepiece_processor.h>

#include <cctype>
#include <charconv>

namespace voxrt::decode {

class SentencePieceModel {
 public:
  sentencepiece::SentencePieceProcessor processor;
};

Vocabulary::Vocabulary() = default;
Vocabulary::Vocabulary(Vocabulary&&) noexcept = default;
Vocabulary& Vocabulary::operator=(Vocabulary&&) noexcept = default;
Vocabulary::~Vocabulary() = default;

Status Vocabulary::index_tokens() {
  if (tokens_.empty()) return invalid_argument("vocabulary: expected at least one unit, found 0");
  if (blank_id_ < 0 || blank_id_ >= size()) {
    return invalid_argument("vocabulary: expected blank_id in [0, ", size(), "), found ",
                            blank_id_);
  }
  ids_.clear();
  starts_word_.assign(tokens_.size(), 0);
  longest_token_bytes_ = 1;
  for (int id = 0; id < size(); ++id) {
    const std::string& token = tokens_[static_cast<std::size_t>(id)];
    // First occurrence wins for lookups; duplicates are legal in the model's class list.
    ids_.emplace(token, id);
    longest_token_bytes_ = std::max(longest_token_bytes_, token.size());
    starts_word_[static_cast<std::size_t>(id)] =
        unit_ != UnitType::kChar && token.starts_with(kWordMarker);
    if (id == blank_id_) continue;
    for (unsigned char c : token) {
      if (c < 128) ascii_in_units_[c] = true;
      has_uppercase_ = has_uppercase_ || (c >= 'A' && c <= 'Z');
      has_lowercase_ = has_lowercase_ || (c >= 'a' && c <= 'z');
    }
  }
  return Status::ok();
}

std::string Vocabulary::normalise_phrase(std::string_view text) const {
  std::string out;
  bool pending_space = false;
  for (unsigned char c : text) {
    if (!has_uppercase_ && c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
    // Units in capitals only (icefall's LibriSpeech BPE): the phrase in capitals too.
    if (has_uppercase_ && !has_lowercase_ && c >= 'a' && c <= 'z')
      c = static_cast<unsigned char>(c - 'a' + 'A');
    const bool ascii_punct = c < 128 && std::ispunct(c) != 0 && !ascii_in_units_[c];
    if (std::isspace(c) != 0 || ascii_punct) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += static_cast<char>(c);
  }
  return out;
}

int Vocabulary::id_of(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

Expected<Vocabulary> Vocabulary::characters(std::vector<std::string> tokens, int blank_id,
                                            std::string word_boundary) {
  Vocabulary vocabulary;
  vocabulary.unit_ = UnitType::kChar;
  vocabulary.tokens_ = std::move(tokens);
  vocabulary.blank_id_ = blank_id;
  VOXRT_RETURN_IF_ERROR(vocabulary.index_tokens());
  vocabulary.word_boundary_id_ = vocabulary.id_of(word_boundary);
  if (vocabulary.word_boundary_id_ == blank_id) {
    return invalid_argument("vocabulary: the word boundary '", word_boundary,
                            "' must not be the blank (id ", blank_id, ")");
  }
  return vocabulary;
}

Expected<Vocabulary> Vocabulary::sentencepiece(const std::string& model_path,
                                               std::vector<std::string> tokens, int blank_id) {
  Vocabulary vocabulary;
  vocabulary.unit_ = UnitType::kSentencePiece;
  vocabulary.sentencepiece_ = std::make_unique<SentencePieceModel>();
  const auto status = vocabulary.sentencepiece_->processor.Load(model_path);
  if (!status.ok()) {
    return io_error(model_path, ": expected a SentencePiece model, found: ", status.ToString());
  }
  if (tokens.empty()) {
    const int pieces = vocabulary.sentencepiece_->processor.GetPieceSize();
    for (int id = 0; id < pieces; ++id) {
      tokens.push_back(vocabulary.sentencepiece_->processor.IdToPiece(id));
    }
  }
  vocabulary.tokens_ = std::move(tokens);
  vocabulary.blank_id_ = blank_id;
  VOXRT_RETURN_IF_ERROR(vocabulary.index_tokens().with_context(model_path));
  return vocabulary;
}

Expected<Vocabulary> Vocabulary::pieces(std::vector<std::string> tokens, int blank_id) {
  Vocabulary vocabulary;
  vocabulary.unit_ = UnitType::kPieces;
  vocabulary.tokens_ = std::move(tokens);
  vocabulary.blank_id_ = blank_id;
  VOXRT_RETURN_IF_ERROR(vocabulary.index_tokens());
  return vocabulary;
}

Expected<Vocabulary> Vocabulary::from_metadata(const std::map<std::string, std::string>& metadata,
                                               const std::string& model_dir) {
  auto get = [&](const char* key) -> const std::string* {
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
  };
  int blank_id = 0;
  if (const std::string* text = get("voxrt.blank_id")) {
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), blank_id);
    if (ec != std::errc() || ptr != text->data() + text->size()) {
      return invalid_argument("metadata voxrt.blank_id: expected an integer, found '", *text, "'");
    }
  }
  std::vector<std::string> tokens;
  if (const std::string* text = get("voxrt.vocabulary")) {
    std::size_t start = 0;
    while (start <= text->size()) {
      std::size_t end = text->find('\n', start);
      if (end == std::string::npos) end = text->size();
      tokens.push_back(text->substr(start, end - start));
      start = end + 1;
    }
    // A trailing newline ends the last line rather than adding an empty unit.
    if (!text->empty() && text->back() == '\n') tokens.pop_back();
  }
  const std::string* unit = get("voxrt.unit");
  if (unit == nullptr || *unit == "char") {
    if (tokens.empty()) return invalid_argument("metadata: voxrt.vocabulary is missing or empty");
    const std::string* boundary = get("voxrt.word_boundary");
    return characters(std::move(tokens), blank_id, boundary != nullptr ? *boundary : " ");
  }
  if (*unit == "sentencepiece") {
    const std::string* model = get("voxrt.sentencepiece_model");
    if (model == nullptr) {
      return invalid_argument(
          "metadata: voxrt.unit is sentencepiece but "
          "voxrt.sentencepiece_model is missing");
    }
    const std::string path =
        model_dir.empty() || model->starts_with('/') ? *model : model_dir + "/" + *model;
    return sentencepiece(path, std::move(tokens), blank_id);
  }
  if (*unit == "pieces") {
    if (tokens.empty()) return invalid_argument("metadata: voxrt.vocabulary is missing or empty");
    return pieces(std::move(tokens), blank_id);
  }
  return invalid_argument("metadata voxrt.unit: expected char, sentencepiece or pieces, found '",
                          *unit, "'");
}

std::string Vocabulary::detokenize(std::span<const int> ids) const {
  std::vector<std::string> pieces;
  std::string text;
  for (int id : ids) {
    if (id < 0 || id >= size() || id == blank_id_) continue;
    if (unit_ == UnitType::kSentencePiece) {
      pieces.push_back(token(id));
    } else {
      text += token(id);
    }
  }
  if (unit_ != UnitType::kChar) {
    std::string decoded;
    if (sentencepiece_ && sentencepiece_->processor.Decode(pieces, &decoded).ok()) return decoded;
    // Pieces the model does not know: join them and turn markers into spaces ourselves.
    for (const std::string& piece : pieces) text += piece;
    std::string spaced;
    for (std::size_t i = 0; i < text.size();) {
      if (text.compare(i, kWordMarker.size(), kWordMarker) == 0) {
        spaced += ' ';
        i += kWordMarker.size();
      } else {
        spaced += text[i++];
      }
    }
    text = std::move(spaced);
  }
  const std::size_t first = text.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  const std::size_t last = text.find_last_not_of(' ');
  // Collapse runs of boundaries: "a  b" -> "a b".
  std::string collapsed;
  for (std::size_t i = first; i <= last; ++i) {
    if (text[i] == ' ' && !collapsed.empty() && collapsed.back() == ' ') continue;
    collapsed += text[i];
  }
  return collapsed;
}

std::vector<WordSpan> Vocabulary::split_words(std::span<const int> ids) const {
  std::vector<WordSpan> words;
  auto close_word = [&](int first, int last) {
    if (first < 0 || last < first) return;
    std::vector<int> word_ids(ids.begin() + first, ids.begin() + last + 1);
    std::string text = detokenize(word_ids);
    if (!text.empty()) words.push_back({std::move(text), first, last});
  };
  int first = -1;
  for (int i = 0; i < static_cast<int>(ids.size()); ++i) {
    const int id = ids[static_cast<std::size_t>(i)];
    if (is_word_boundary(id)) {
      close_word(first, i - 1);
      first = -1;
      continue;
    }
    if (unit_ != UnitType::kChar && starts_word(id)) {
      close_word(first, i - 1);
      first = i;
      continue;
    }
    if (first < 0) first = i;
  }
  close_word(first, static_cast<int>(ids.size()) - 1);
  return words;
}

Expected<std::vector<int>> Vocabulary::encode(std::string_view text) const {
  std::vector<int> ids;
  if (unit_ == UnitType::kSentencePiece) {
    std::vector<std::string> pieces;
    const auto status = sentencepiece_->processor.Encode(text, &pieces);
    if (!status.ok()) {
      return invalid_argument("encoding '", text, "': ", status.ToString());
    }
    for (const std::string& piece : pieces) {
      const int id = id_of(piece);
      if (id < 0) {
        return invalid_argument("encoding '", text, "': piece '", piece,
                                "' is not in the model's vocabulary");
      }
      ids.push_back(id);
    }
    return ids;
  }
  if (unit_ == UnitType::kPieces) {
    std::string marked;
    bool word_start = true;
    for (char c : text) {
      if (c == ' ') {
        word_start = true;
        continue;
      }
      if (word_start) marked += kWordMarker;
      word_start = false;
      marked += c;
    }
    auto as_is = longest_match(marked);
    if (as_is) return as_is;
    for (auto change : {::toupper, ::tolower}) {
      std::string cased = marked;
      for (char& c : cased) {
        if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(change(c));
      }
      auto matched = longest_match(cased);
      if (matched) return matched;
    }
    return as_is.status();
  }
  return longest_match(text);
}

Expected<std::vector<int>> Vocabulary::longest_match(std::string_view text) const {
  std::vector<int> ids;
  std::size_t position = 0;
  while (position < text.size()) {
    int found = -1;
    std::size_t found_bytes = 0;
    for (std::size_t bytes = std::min(longest_token_bytes_, text.size() - position); bytes > 0;
         --bytes) {
      const int id = id_of(text.substr(position, bytes));
      if (id >= 0 && id != blank_id_) {
        found = id;
        found_bytes = bytes;
        break;
      }
    }
    if (found < 0) {
      return invalid_argument("encoding '", text, "': no unit for the text at byte ", position,
                              " ('", text.substr(position, 1), "')");
    }
    ids.push_back(found);
    position += found_bytes;
  }
  return ids;
}

}  // namespace voxrt::decode
