#include "stream/ctc/ctc_search.h"

#include <vector>

#include "decode/context_graph.h"
#include "stream/recognizer.h"

namespace voxrt::stream {
namespace {

// Log-probability that stands for "impossible" in synthetic blank frames; finite so the beam
// search's log-sum-exp stays finite.
constexpr float kImpossibleLogProb = -30.0f;

}  // namespace

Expected<CtcSearch> CtcSearch::create(const CtcSearchResources& resources,
                                      const StreamOptions& options,
                                      const ResolvedDecoding& decoding) {
  CtcSearch search(resources.vocabulary->size(), resources.vocabulary->blank_id());
  if (decoding.decoder != DecoderKind::kBeam) {
    search.greedy_.emplace(resources.vocabulary, resources.time_base);
    return search;
  }
  std::shared_ptr<const decode::ContextGraph> hotwords;
  if (!options.hotwords.empty()) {
    VOXRT_ASSIGN_OR_RETURN(
        auto graph, decode::ContextGraph::from_phrases(*resources.vocabulary, options.hotwords,
                                                       decoding.hotword_bonus));
    hotwords = std::make_shared<const decode::ContextGraph>(std::move(graph));
  }
  VOXRT_ASSIGN_OR_RETURN(auto beam, decode::CtcPrefixBeamDecoder::create(
                                        resources.vocabulary, decoding.beam, resources.time_base,
                                        decoding.use_lm ? resources.lm : nullptr, hotwords,
                                        decoding.lexicon_only ? resources.lexicon : nullptr));
  search.beam_.emplace(std::move(beam));
  return search;
}

Status CtcSearch::accept(const float* log_probs, int frames) {
  if (frames <= 0) return Status::ok();
  const decode::LogProbView view{log_probs, frames, vocab_size_};
  return greedy_ ? greedy_->accept(view) : beam_->accept(view);
}

Status CtcSearch::accept_blank_frames(int frames) {
  if (frames <= 0) return Status::ok();
  std::vector<float> blanks(
      static_cast<std::size_t>(frames) * static_cast<std::size_t>(vocab_size_), kImpossibleLogProb);
  for (int t = 0; t < frames; ++t)
    blanks[static_cast<std::size_t>(t) * static_cast<std::size_t>(vocab_size_) +
           static_cast<std::size_t>(blank_id_)] = 0.0f;
  return accept(blanks.data(), frames);
}

DecoderProgress CtcSearch::progress() const {
  if (greedy_)
    return {greedy_->utterance_frames(), greedy_->trailing_blank_frames(), greedy_->has_tokens()};
  return {beam_->utterance_frames(), beam_->trailing_blank_frames(), beam_->has_tokens()};
}

decode::DecodingResult CtcSearch::partial() const {
  return greedy_ ? greedy_->partial() : beam_->partial();
}

decode::DecodingResult CtcSearch::finalize() {
  return greedy_ ? greedy_->finalize() : beam_->finalize();
}

void CtcSearch::reset_utterance() {
  if (greedy_) {
    greedy_->reset_utterance();
  } else {
    beam_->reset_utterance();
  }
}

}  // namespace voxrt::stream
