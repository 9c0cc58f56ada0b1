// Beam search over one 30 s window (beside the greedy WindowSearch, the same window rules), as
// OpenAI Whisper's BeamSearchDecoder does it with patience 1 and no length penalty:
// - each step, every beam's logits go through the window rules; each beam offers its
//   beam_width + 1 most likely tokens, scored by the beam's summed log-probability plus the
//   token's (candidates whose token the rules forbid are not offered);
// - over all candidates, best first: one that ends in end-of-text is a finished sequence; the
//   others become the next beams until there are beam_width of them (so end-of-text candidates
//   ranked after that are dropped);
// - a finished sequence is kept while fewer than beam_width are; the window ends when
//   beam_width are kept, or when prompt + tokens reach max_target_positions (then the live beams,
//   best first, fill the finished list up to beam_width);
// - the result is the finished sequence with the highest summed log-probability divided by its
//   token count (end-of-text not counted), the first on ties.
// The repetition guard does not stop a beam (the beams go on to end-of-text or the length
// limit); it cuts the chosen sequence at its first repeat, as greedy search would have stopped.
// The mean log-probability of the silence rule is the chosen sequence's summed log-probability
// over its tokens, end-of-text included when it ended there.
// Every row of the batch is one beam; `advance` says which row's KV cache each next beam extends,
// and the family reorders the cache by it.
#pragma once

#include <memory>
#include <vector>

#include "stream/encoder_decoder/window_search.h"

namespace voxrt::stream {

class WindowBeamSearch final : public WindowDecoding {
 public:
  // The search starts with one row (the prompt's) and widens to `beam_width` rows.
  WindowBeamSearch(std::shared_ptr<const WindowRules> rules, std::vector<int> prompt,
                   int beam_width);

  void observe_first_position(const float* logits) override;
  int live_rows() const override { return static_cast<int>(beams_.size()); }
  int next_token(int row) const override;
  void advance(float* logits, std::vector<int>& sources) override;
  WindowOutcome outcome() const override;

  struct Hypothesis {
    std::vector<int> tokens;  // after the prompt, without end-of-text
    double sum_log_probability = 0.0;
    bool ended = false;  // said end-of-text
  };
  const std::vector<Hypothesis>& finished() const { return finished_; }

 private:
  std::shared_ptr<const WindowRules> rules_;
  std::vector<int> prompt_;
  int beam_width_;
  std::vector<Hypothesis> beams_;
  std::vector<Hypothesis> finished_;
  double no_speech_probability_ = 0.0;
};

}  // namespace voxrt::stream
