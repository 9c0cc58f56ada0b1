// Word error rate: the words of a transcript (lowercase, punctuation dropped) and the Levenshtein
// distance between two word sequences (substitutions + deletions + insertions). Used wherever
// voxrt scores itself: the load generator, manifest decoding and the deploy accuracy gate.
#pragma once

#include <string>
#include <vector>

namespace voxrt::decode {

// Lowercase words with punctuation removed ("Don't-stop!" -> "don't", "stop").
std::vector<std::string> normalize_words(const std::string& text);
// Levenshtein distance over words.
long long word_edit_distance(const std::vector<std::string>& reference,
                             const std::vector<std::string>& hypothesis);

}  // namespace voxrt::decode
