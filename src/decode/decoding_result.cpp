#include "decode/decoding_result.h"

#include <algorithm>
#include <cmath>

namespace voxrt::decode {

DecodingResult make_result(const Vocabulary& vocabulary, std::vector<TokenSpan> tokens,
                           const TimeBase& time_base, double score, bool is_final) {
  DecodingResult result;
  std::vector<int> ids;
  ids.reserve(tokens.size());
  for (const TokenSpan& token : tokens) ids.push_back(token.id);
  result.text = vocabulary.detokenize(ids);
  double previous_end_s = 0.0;
  for (const WordSpan& span : vocabulary.split_words(ids)) {
    WordResult word;
    word.word = span.text;
    const TokenSpan& first = tokens[static_cast<std::size_t>(span.first_token)];
    const TokenSpan& last = tokens[static_cast<std::size_t>(span.last_token)];
    // Words stay in order: the start delay is larger than the end delay for a model whose
    // first unit of a word comes late, so a word may not start before the previous one ends.
    word.start_s = std::max(previous_end_s,
                            time_base.seconds(first.start_frame) - time_base.word_start_delay_s);
    // A word lasts at least the output frame its units were emitted in: for a model whose end
    // delay is the larger one (the default model version 2: 40 ms at starts, 200 ms at ends), a
    // short word's corrected end would fall before its start.
    word.end_s = std::max(word.start_s + time_base.seconds(1),
                          time_base.seconds(last.end_frame + 1) - time_base.word_end_delay_s);
    double posterior_sum = 0.0;
    for (int i = span.first_token; i <= span.last_token; ++i) {
      posterior_sum +=
          std::exp(static_cast<double>(tokens[static_cast<std::size_t>(i)].peak_log_posterior));
    }
    previous_end_s = word.end_s;
    word.confidence = static_cast<float>(posterior_sum / (span.last_token - span.first_token + 1));
    result.words.push_back(std::move(word));
  }
  result.tokens = std::move(tokens);
  result.score = score;
  result.is_final = is_final;
  return result;
}

}  // namespace voxrt::decode
