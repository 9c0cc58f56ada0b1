#include "decode/word_error_rate.h"

#include <algorithm>
#include <cctype>

namespace voxrt::decode {

std::vector<std::string> normalize_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '\'') {
      word.push_back(static_cast<char>(std::tolower(u)));
    } else if (std::isspace(u) || c == '-') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

long long word_edit_distance(const std::vector<std::string>& reference,
                             const std::vector<std::string>& hypothesis) {
  std::vector<long long> previous(hypothesis.size() + 1), current(hypothesis.size() + 1);
  for (std::size_t j = 0; j <= hypothesis.size(); ++j) previous[j] = static_cast<long long>(j);
  for (std::size_t i = 1; i <= reference.size(); ++i) {
    current[0] = static_cast<long long>(i);
    for (std::size_t j = 1; j <= hypothesis.size(); ++j) {
      const long long substitute =
          previous[j - 1] + (reference[i - 1] == hypothesis[j - 1] ? 0 : 1);
      current[j] = std::min({substitute, previous[j] + 1, current[j - 1] + 1});
    }
    std::swap(previous, current);
  }
  return previous[hypothesis.size()];
}

}  // namespace voxrt::decode
