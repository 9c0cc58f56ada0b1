#include "decode/stateful_tdt_beam.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "decode/log_probability.h"

namespace voxrt::decode {
namespace {

using Hypothesis = StatefulTransducerBeamSearch::Hypothesis;

// A kept hypothesis (unit < 0: waiting at a later frame, kept as it is) or an extension of one.
struct Candidate {
  double score;
  std::size_t hyp;
  int unit;
  int duration_index;
  float unit_log_prob;
};

bool better(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.hyp != b.hyp) return a.hyp < b.hyp;
  if (a.unit != b.unit) return a.unit < b.unit;
  return a.duration_index < b.duration_index;
}

// Adds h to `next`, merging it into an earlier hypothesis with the same units at the same frame.
void merge_into(std::vector<Hypothesis>& next, Hypothesis&& h) {
  auto same = std::find_if(next.begin(), next.end(), [&](const Hypothesis& o) {
    return o.frame == h.frame && o.units == h.units;
  });
  if (same != next.end()) {
    same->log_prob = log_add(same->log_prob, h.log_prob);
  } else {
    next.push_back(std::move(h));
  }
}

}  // namespace

Status stateful_tdt_beam(StatefulTransducerNetworks& networks,
                         std::span<StatefulTransducerBeamSearch* const> streams,
                         const float* encoder_out, int frames_per_stream,
                         std::span<const int> valid_frames) {
  if (valid_frames.size() != streams.size()) {
    return invalid_argument("TDT beam search: ", streams.size(), " streams but ",
                            valid_frames.size(), " frame counts");
  }
  const std::vector<int>& durations = networks.durations();
  if (durations.empty()) {
    return invalid_argument("TDT beam search: the networks have no durations (an RNN-T model)");
  }
  const int vocab = networks.vocab_size();
  const int blank = networks.blank_id();
  const int num_durations = static_cast<int>(durations.size());
  const int width = vocab + num_durations;
  const auto enc_dim = static_cast<std::size_t>(networks.encoder_dim());
  std::vector<int> frames(streams.size());
  for (std::size_t b = 0; b < streams.size(); ++b)
    frames[b] = std::clamp(valid_frames[b], 0, frames_per_stream);
  // Per round: each stream's lowest frame, and the rows (hypotheses) expanded there.
  std::vector<int> lowest(streams.size());
  std::vector<Hypothesis*> rows;
  BeamRoundScratch scratch;
  std::vector<float> enc_rows, logits;
  std::vector<double> unit_lp, duration_lp;
  std::vector<int> order;
  std::vector<Candidate> candidates;
  for (;;) {
    rows.clear();
    enc_rows.clear();
    std::vector<std::size_t> live;
    for (std::size_t b = 0; b < streams.size(); ++b) {
      auto& hyps = streams[b]->hyps_;
      int t = std::numeric_limits<int>::max();
      for (const Hypothesis& h : hyps) t = std::min(t, h.frame);
      lowest[b] = t;
      if (t >= frames[b]) continue;
      live.push_back(b);
      const float* frame =
          encoder_out + (b * static_cast<std::size_t>(frames_per_stream) + t) * enc_dim;
      for (Hypothesis& h : hyps) {
        if (h.frame != t) continue;
        rows.push_back(&h);
        enc_rows.insert(enc_rows.end(), frame, frame + enc_dim);
      }
    }
    if (live.empty()) break;
    // The decoder for the hypotheses that emitted (or start).
    VOXRT_RETURN_IF_ERROR(run_round_networks(networks, rows, enc_rows, scratch, logits));
    if (logits.size() != rows.size() * static_cast<std::size_t>(width)) {
      return invalid_argument("TDT joiner: expected ", rows.size(), " x ", width, " logits (",
                              vocab, " units and ", num_durations, " durations), found ",
                              logits.size(), " values");
    }
    std::size_t row = 0;
    for (std::size_t b : live) {
      StatefulTransducerBeamSearch& s = *streams[b];
      const int t = lowest[b];
      const auto beam = static_cast<std::size_t>(s.beam_width_);
      candidates.clear();
      for (std::size_t i = 0; i < s.hyps_.size(); ++i) {
        const Hypothesis& h = s.hyps_[i];
        if (h.frame != t) {
          candidates.push_back({h.log_prob, i, -1, -1, 0.0f});
          continue;
        }
        const float* logit_row = logits.data() + row * static_cast<std::size_t>(width);
        ++row;
        log_softmax(logit_row, vocab, unit_lp);
        log_softmax(logit_row + vocab, num_durations, duration_lp);
        // Only a hypothesis's beam best units can be among the beam best (unit, duration)
        // pairs: for any duration, each better unit makes a better pair.
        order.resize(static_cast<std::size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        const std::size_t top = std::min(beam, order.size());
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                          order.end(), [&](int a, int c) {
                            const double la = unit_lp[static_cast<std::size_t>(a)];
                            const double lc = unit_lp[static_cast<std::size_t>(c)];
                            return la != lc ? la > lc : a < c;
                          });
        for (std::size_t u = 0; u < top; ++u) {
          const int k = order[u];
          const double lk = unit_lp[static_cast<std::size_t>(k)];
          for (int j = 0; j < num_durations; ++j) {
            candidates.push_back({h.log_prob + lk + duration_lp[static_cast<std::size_t>(j)], i, k,
                                  j, static_cast<float>(lk)});
          }
        }
      }
      const std::size_t keep = std::min(candidates.size(), beam);
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                        candidates.end(), better);
      const long long emit_frame = s.frames_seen_ + t;
      std::vector<Hypothesis> next;
      for (std::size_t c = 0; c < keep; ++c) {
        const Candidate& cand = candidates[c];
        Hypothesis h = s.hyps_[cand.hyp];
        if (cand.unit < 0) {
          merge_into(next, std::move(h));
          continue;
        }
        h.log_prob = cand.score;
        if (cand.unit != blank)
          emit_unit(h, cand.unit, emit_frame, cand.unit_log_prob, s.hotwords_.get());
        // The greedy search's frame rules, per hypothesis.
        const int skip = durations[static_cast<std::size_t>(cand.duration_index)];
        h.symbols += 1;
        if (cand.unit == blank && skip == 0) h.symbols = s.max_symbols_;
        h.frame = t + skip;
        if (skip > 0 || h.symbols >= s.max_symbols_) {
          if (h.symbols >= s.max_symbols_) ++h.frame;
          h.symbols = 0;
        }
        merge_into(next, std::move(h));
      }
      s.hyps_ = std::move(next);
    }
  }
  // Frames past a chunk's end are dropped (as the greedy search does): the next chunk starts at
  // its first frame, where hypotheses with equal units are one.
  for (std::size_t b = 0; b < streams.size(); ++b) {
    StatefulTransducerBeamSearch& s = *streams[b];
    std::vector<Hypothesis> next;
    for (Hypothesis& h : s.hyps_) {
      h.frame = 0;
      h.symbols = 0;
      merge_into(next, std::move(h));
    }
    s.hyps_ = std::move(next);
    s.frames_seen_ += frames[b];
  }
  return Status::ok();
}

}  // namespace voxrt::decode
