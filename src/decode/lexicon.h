// The words a lexicon-constrained beam search may spell: a sorted word list that answers "is this
// a word" and "does some word start with this", so a hypothesis that spells a non-word is pruned
// as soon as its letters leave every word (issue 31: without it the beam with an LM still wrote
// words it had never seen, "calind dor").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "decode/arpa_lm.h"

namespace voxrt::decode {

class Lexicon {
 public:
  explicit Lexicon(std::vector<std::string> words);
  // The LM's words, without <s>, </s> and <unk>.
  static Lexicon from_lm(const ArpaLm& lm);

  bool contains(std::string_view word) const;
  bool has_prefix(std::string_view prefix) const;
  std::size_t size() const { return words_.size(); }

 private:
  std::vector<std::string> words_;  // sorted, unique
};

}  // namespace voxrt::decode
