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

enum class UnitType : std::uint8_t { kChar, kSentencePiece };

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
  // SentencePiece: the piece begins with U+2581 (a new word starts here).
  bool starts_word(int id) const { return starts_word_[static_cast<std::size_t>(id)] != 0; }

  std::string detokenize(std::span<const int> ids) const;
  std::vector<WordSpan> split_words(std::span<const int> ids) const;
  // Units for a text (hotword phrases): characters by longest match against the vocabulary,
  // pieces through the SentencePiece model. Errors name the text that has no units.
  Expected<std::vector<int>> encode(std::string_view text) const;

 private:
  Vocabulary();
  Status index_tokens();

  UnitType unit_ = UnitType::kChar;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> ids_;
  std::vector<std::uint8_t> starts_word_;
  int blank_id_ = 0;
  int word_boundary_id_ = -1;
  std::size_t longest_token_bytes_ = 1;
  std::unique_ptr<SentencePieceModel> sentencepiece_;
};

// The SentencePiece word marker U+2581 in UTF-8.
inline constexpr std::string_view kWordMarker = "\xE2\x96\x81";

}  // namespace voxrt::decode
