#include "decode/lexicon.h"

#include <algorithm>

namespace voxrt::decode {

Lexicon::Lexicon(std::vector<std::string> words) : words_(std::move(words)) {
  std::sort(words_.begin(), words_.end());
  words_.erase(std::unique(words_.begin(), words_.end()), words_.end());
}

Lexicon Lexicon::from_lm(const ArpaLm& lm) {
  std::vector<std::string> words;
  for (const std::string& word : lm.words()) {
    if (word != "<s>" && word != "</s>" && word != "<unk>") words.push_back(word);
  }
  return Lexicon(std::move(words));
}

bool Lexicon::contains(std::string_view word) const {
  return std::binary_search(words_.begin(), words_.end(), word, std::less<>());
}

bool Lexicon::has_prefix(std::string_view prefix) const {
  auto it = std::lower_bound(words_.begin(), words_.end(), prefix, std::less<>());
  return it != words_.end() && std::string_view(*it).starts_with(prefix);
}

}  // namespace voxrt::decode
