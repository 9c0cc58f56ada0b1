#include "decode/stateful_transducer_beam.h"

#include <algorithm>
#include <limits>

#include "decode/log_probability.h"
#include "decode/stateful_tdt_beam.h"

namespace voxrt::decode {

StatefulTransducerBeamSearch::StatefulTransducerBeamSearch(
    std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base, int beam_width,
    int max_symbols_per_frame, int state_size, std::shared_ptr<const ContextGraph> hotwords)
    : vocabulary_(std::move(vocabulary)),
      time_base_(time_base),
      beam_width_(beam_width),
      max_symbols_(max_symbols_per_frame),
      state_size_(state_size),
      hotwords_(std::move(hotwords)) {
  reset_state();
}

void StatefulTransducerBeamSearch::reset_state() {
  Hypothesis start;
  start.last_unit = vocabulary_->blank_id();
  start.state.assign(static_cast<std::size_t>(state_size_), 0.0f);
  hyps_.assign(1, std::move(start));
}

const StatefulTransducerBeamSearch::Hypothesis& StatefulTransducerBeamSearch::best() const {
  std::size_t best = 0;
  for (std::size_t i = 1; i < hyps_.size(); ++i)
    if (hyps_[i].log_prob > hyps_[best].log_prob) best = i;
  return hyps_[best];
}

void StatefulTransducerBeamSearch::accept_skipped_frames(int frames) {
  if (frames > 0) frames_seen_ += frames;
}

long long StatefulTransducerBeamSearch::trailing_blank_frames() const {
  const Hypothesis& h = best();
  const long long since = h.last_emit_frame >= 0 ? h.last_emit_frame + 1 : utterance_start_frame_;
  return std::max(0LL, frames_seen_ - since);
}

DecodingResult StatefulTransducerBeamSearch::partial() const {
  const Hypothesis& h = best();
  return make_result(*vocabulary_, h.tokens, time_base_, h.log_prob, false);
}

DecodingResult StatefulTransducerBeamSearch::finalize() {
  const Hypothesis& h = best();
  // An unfinished hotword match gives its bonus back.
  const double score = h.log_prob + (hotwords_ ? hotwords_->finalize(h.context_state) : 0.0f);
  return make_result(*vocabulary_, h.tokens, time_base_, score, true);
}

void StatefulTransducerBeamSearch::reset_utterance() {
  Hypothesis kept = best();
  kept.units.clear();
  kept.tokens.clear();
  kept.log_prob = 0.0;
  kept.last_emit_frame = -1;
  kept.context_state = ContextGraph::kRoot;
  kept.frame = 0;
  kept.symbols = 0;
  hyps_.assign(1, std::move(kept));
  utterance_start_frame_ = frames_seen_;
}

Status stateful_transducer_beam(StatefulTransducerNetworks& networks,
                                std::span<StatefulTransducerBeamSearch* const> streams,
                                const float* encoder_out, int frames_per_stream,
                                std::span<const int> valid_frames) {
  using Hypothesis = StatefulTransducerBeamSearch::Hypothesis;
  if (valid_frames.size() != streams.size()) {
    return invalid_argument("transducer beam search: ", streams.size(), " streams but ",
                            valid_frames.size(), " frame counts");
  }
  if (!networks.durations().empty()) {
    return stateful_tdt_beam(networks, streams, encoder_out, frames_per_stream, valid_frames);
  }
  const int vocab = networks.vocab_size();
  const int blank = networks.blank_id();
  const auto enc_dim = static_cast<std::size_t>(networks.encoder_dim());
  int longest = 0;
  for (std::size_t b = 0; b < streams.size(); ++b)
    longest = std::max(longest, std::min(valid_frames[b], frames_per_stream));
  std::vector<Hypothesis*> rows;
  BeamRoundScratch scratch;
  std::vector<float> enc_rows, logits;
  std::vector<double> log_probs;
  for (int t = 0; t < longest; ++t) {
    // Every hypothesis of the streams that still have frame t.
    rows.clear();
    enc_rows.clear();
    std::vector<std::size_t> live;
    for (std::size_t b = 0; b < streams.size(); ++b) {
      if (t >= std::min(valid_frames[b], frames_per_stream)) continue;
      live.push_back(b);
      const float* frame =
          encoder_out + (b * static_cast<std::size_t>(frames_per_stream) + t) * enc_dim;
      for (Hypothesis& h : streams[b]->hyps_) {
        rows.push_back(&h);
        enc_rows.insert(enc_rows.end(), frame, frame + enc_dim);
      }
    }
    // The decoder for the hypotheses that emitted (or start).
    VOXRT_RETURN_IF_ERROR(run_round_networks(networks, rows, enc_rows, scratch, logits));
    if (logits.size() != rows.size() * static_cast<std::size_t>(vocab)) {
      return invalid_argument("transducer joiner: expected ", rows.size(), " x ", vocab,
                              " logits, found ", logits.size(), " values");
    }
    // Per stream: the best extensions, merged.
    std::size_t row = 0;
    for (std::size_t b : live) {
      StatefulTransducerBeamSearch& s = *streams[b];
      struct Candidate {
        double score;
        std::size_t hyp;
        int unit;
        float log_posterior;
      };
      std::vector<Candidate> candidates;
      candidates.reserve(s.hyps_.size() * static_cast<std::size_t>(vocab));
      for (std::size_t i = 0; i < s.hyps_.size(); ++i, ++row) {
        log_softmax(logits.data() + row * static_cast<std::size_t>(vocab), vocab, log_probs);
        for (int k = 0; k < vocab; ++k) {
          const double lp = log_probs[static_cast<std::size_t>(k)];
          candidates.push_back({s.hyps_[i].log_prob + lp, i, k, static_cast<float>(lp)});
        }
      }
      const std::size_t keep = std::min(candidates.size(), static_cast<std::size_t>(s.beam_width_));
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                        candidates.end(), [](const Candidate& a, const Candidate& c) {
                          if (a.score != c.score) return a.score > c.score;
                          if (a.hyp != c.hyp) return a.hyp < c.hyp;
                          return a.unit < c.unit;
                        });
      const long long frame = s.frames_seen_ + t;
      std::vector<Hypothesis> next;
      for (std::size_t c = 0; c < keep; ++c) {
        const Candidate& cand = candidates[c];
        Hypothesis h = s.hyps_[cand.hyp];
        h.log_prob = cand.score;
        if (cand.unit != blank)
          emit_unit(h, cand.unit, frame, cand.log_posterior, s.hotwords_.get());
        auto same = std::find_if(next.begin(), next.end(),
                                 [&](const Hypothesis& o) { return o.units == h.units; });
        if (same != next.end()) {
          same->log_prob = log_add(same->log_prob, h.log_prob);
        } else {
          next.push_back(std::move(h));
        }
      }
      s.hyps_ = std::move(next);
    }
  }
  for (std::size_t b = 0; b < streams.size(); ++b)
    streams[b]->frames_seen_ += std::clamp(valid_frames[b], 0, frames_per_stream);
  return Status::ok();
}

void emit_unit(StatefulTransducerBeamSearch::Hypothesis& h, int unit, long long frame,
               float log_posterior, const ContextGraph* hotwords) {
  h.units.push_back(unit);
  h.tokens.push_back(TokenSpan{unit, frame, frame, log_posterior});
  h.last_unit = unit;
  h.state = h.next_state;
  h.decoder_out.clear();
  h.last_emit_frame = frame;
  if (hotwords != nullptr) {
    int next_state = ContextGraph::kRoot;
    h.log_prob += hotwords->forward(h.context_state, unit, next_state);
    h.context_state = next_state;
  }
}

Status run_round_networks(StatefulTransducerNetworks& networks,
                          std::span<StatefulTransducerBeamSearch::Hypothesis* const> rows,
                          const std::vector<float>& enc_rows, BeamRoundScratch& scratch,
                          std::vector<float>& logits) {
  const auto state_size = static_cast<std::size_t>(networks.state_size());
  const auto dec_dim = static_cast<std::size_t>(networks.decoder_dim());
  scratch.stale.clear();
  scratch.units.clear();
  scratch.states.clear();
  for (auto* h : rows) {
    if (!h->decoder_out.empty()) continue;
    if (h->state.size() != state_size) {
      return invalid_argument("transducer beam search: a hypothesis's state has ", h->state.size(),
                              " values, the prediction network's ", state_size);
    }
    scratch.stale.push_back(h);
    scratch.units.push_back(h->last_unit);
    scratch.states.insert(scratch.states.end(), h->state.begin(), h->state.end());
  }
  if (!scratch.stale.empty()) {
    const auto n = scratch.stale.size();
    VOXRT_RETURN_IF_ERROR(networks.run_decoder(scratch.units, scratch.states, static_cast<int>(n),
                                               scratch.decoder_out, scratch.next_states));
    if (scratch.decoder_out.size() != n * dec_dim || scratch.next_states.size() != n * state_size) {
      return invalid_argument("transducer decoder: expected ", n, " x ", dec_dim, " outputs and ",
                              n, " x ", state_size, " states, found ", scratch.decoder_out.size(),
                              " and ", scratch.next_states.size(), " values");
    }
    for (std::size_t r = 0; r < n; ++r) {
      auto at = [](const std::vector<float>& v, std::size_t offset) {
        return v.begin() + static_cast<std::ptrdiff_t>(offset);
      };
      scratch.stale[r]->decoder_out.assign(at(scratch.decoder_out, r * dec_dim),
                                           at(scratch.decoder_out, (r + 1) * dec_dim));
      scratch.stale[r]->next_state.assign(at(scratch.next_states, r * state_size),
                                          at(scratch.next_states, (r + 1) * state_size));
    }
  }
  scratch.dec_rows.clear();
  for (const auto* h : rows)
    scratch.dec_rows.insert(scratch.dec_rows.end(), h->decoder_out.begin(), h->decoder_out.end());
  return networks.run_joiner(enc_rows, scratch.dec_rows, static_cast<int>(rows.size()), logits);
}

}  // namespace voxrt::decode
