// One stream's CTC search, shared by the streaming (ctc_model.h) and offline
// (offline_ctc_model.h) CTC families: greedy, or the prefix beam search with the LM, lexicon and
// hotwords the stream asked for, fed log-probability frames and blank frames for audio that
// skipped the model.
#pragma once

#include <memory>
#include <optional>

#include "decode/arpa_lm.h"
#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "decode/lexicon.h"
#include "stream/model_family.h"

namespace voxrt::stream {

// What a CTC family holds for its streams' searches.
struct CtcSearchResources {
  std::shared_ptr<const decode::Vocabulary> vocabulary;
  decode::TimeBase time_base;
  std::shared_ptr<const decode::ArpaLm> lm;        // null: no LM loaded
  std::shared_ptr<const decode::Lexicon> lexicon;  // the LM's words, for lexicon_only
};

class CtcSearch {
 public:
  // The search `decoding` resolved; hotwords (options.hotwords) come with the beam search only
  // (ModelFamily::hotwords_need_beam_search: the driver checks).
  static Expected<CtcSearch> create(const CtcSearchResources& resources,
                                    const StreamOptions& options, const ResolvedDecoding& decoding);

  // `frames` frames of vocabulary-size log-probabilities.
  Status accept(const float* log_probs, int frames);
  // `frames` output frames that skipped the model, seen as certain blanks.
  Status accept_blank_frames(int frames);
  DecoderProgress progress() const;
  decode::DecodingResult partial() const;
  decode::DecodingResult finalize();
  void reset_utterance();

 private:
  CtcSearch(int vocab_size, int blank_id) : vocab_size_(vocab_size), blank_id_(blank_id) {}

  int vocab_size_;
  int blank_id_;
  std::optional<decode::GreedyCtcDecoder> greedy_;
  std::optional<decode::CtcPrefixBeamDecoder> beam_;
};

}  // namespace voxrt::stream
