// The output units of a CTC model: characters (with a word-boundary unit) or SentencePiece
// pieces, read from the model metadata (docs/model_contract.md). Knows how units join into words
// and text, and how text (hotword phrases) splits into units.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::decode {

// kPieces: word pieces (or characters) whose word starts carry U+2581, detokenized by joining
// them and turning the marker into a space, as icefall's tokens.txt and sherpa-onnx use them
// without a SentencePiece model file.
enum class UnitType : std::uint8_t { kChar, kSentencePiece, kPieces };

// A word as a run of token positions [first_token, last_token] in a token sequence.
struct WordSpan {
  std::string text;
  int first_token;
  int last_token;
};

class SentencePieceModel;

class Vocabulary {
 public:
  // Character units; `word_boundary` is the unit that separates words (usually " ").
  static Expected<Vocabulary> characters(std::vector<std::string> tokens, int blank_id,
                                         std::string word_boundary = " ");
  // SentencePiece units: `tokens` are the CTC classes' piece strings (empty: the model's pieces
  // in id order). The model file gives detokenization and hotword encoding.
  static Expected<Vocabulary> sentencepiece(const std::string& model_path,
                                            std::vector<std::string> tokens, int blank_id);
  // Word pieces without a model file (kPieces).
  static Expected<Vocabulary> pieces(std::vector<std::string> tokens, int blank_id);
  // voxrt.vocabulary, voxrt.unit, voxrt.blank_id, voxrt.word_boundary and
  // voxrt.sentencepiece_model (a file name relative to `model_dir`).
  static Expected<Vocabulary> from_metadata(const std::map<std::string, std::string>& metadata,
                                            const std::string& model_dir);

  Vocabulary(Vocabulary&&) noexcept;
  Vocabulary& operator=(Vocabulary&&) noexcept;
  ~Vocabulary();

  int size() const { return static_cast<int>(tokens_.size()); }
  int blank_id() const { return blank_id_; }
  UnitType unit() const { return unit_; }
  const std::string& token(int id) const { return tokens_[static_cast<std::size_t>(id)]; }
  // -1 when absent.
  int id_of(std::string_view token) const;
  int word_boundary_id() const { return word_boundary_id_; }

  // Character units: this id separates words. SentencePiece: never.
  bool is_word_boundary(int id) const { return id == word_boundary_id_ && id >= 0; }
  // SentencePiece and pieces: the unit begins with U+2581 (a new word starts here).
  bool starts_word(int id) const { return starts_word_[static_cast<std::size_t>(id)] != 0; }

  std::string detokenize(std::span<const int> ids) const;
  std::vector<WordSpan> split_words(std::span<const int> ids) const;
  // Units for a text (hotword phrases): characters by longest match against the vocabulary,
  // pieces through the SentencePiece model, model-less pieces by longest match of the text with
  // U+2581 before each word (retried in upper then lower case: icefall's English pieces are
  // upper case). Errors name the text that has no units.
  Expected<std::vector<int>> encode(std::string_view text) const;
  // A user's phrase as the units need it (hotwords): ASCII letters lowercased when no unit holds
  // an uppercase one (uppercased when no unit holds a lowercase one), ASCII punctuation that no
  // unit holds turned into spaces, runs of spaces made one, the ends trimmed. "Turn ON the T.V.!"
  // -> "turn on the t v" for a-z units.
  std::string normalise_phrase(std::string_view text) const;

 private:
  Vocabulary();
  Status index_tokens();
  Expected<std::vector<int>> longest_match(std::string_view text) const;

  UnitType unit_ = UnitType::kChar;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> ids_;
  std::vector<std::uint8_t> starts_word_;
  int blank_id_ = 0;
  int word_boundary_id_ = -1;
  std::size_t longest_token_bytes_ = 1;
  // ASCII characters that occur in some unit (normalise_phrase keeps those).
  std::vector<bool> ascii_in_units_ = std::vector<bool>(128, false);
  bool has_uppercase_ = false;
  bool has_lowercase_ = false;
  std::unique_ptr<SentencePieceModel> sentencepiece_;
};

// The SentencePiece word marker U+2581 in UTF-8.
inline constexpr std::string_view kWordMarker = "\xE2\x96\x81";

}  // namespace voxrt::decode
