#include "decode/transducer_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace voxrt::decode {
namespace {

void log_softmax_row(const float* logits, int vocab, std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(vocab));
  float max_logit = logits[0];
  for (int v = 1; v < vocab; ++v) max_logit = std::max(max_logit, logits[v]);
  double sum = 0.0;
  for (int v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v] - max_logit));
  const auto log_sum = static_cast<float>(std::log(sum)) + max_logit;
  for (int v = 0; v < vocab; ++v) out[static_cast<std::size_t>(v)] = logits[v] - log_sum;
}

double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -std::numeric_limits<double>::infinity()) return a;
  return a + std::log1p(std::exp(b - a));
}

void push_context(std::vector<std::int64_t>& context, int unit) {
  std::rotate(context.begin(), context.begin() + 1, context.end());
  context.back() = unit;
}

// Runs the decoder for every hypothesis in `hyps` whose output is not known yet.
Status fill_decoder_outputs(TransducerNetworks& networks, std::span<TransducerHypothesis*> hyps) {
  std::vector<std::int64_t> contexts;
  std::vector<TransducerHypothesis*> missing;
  for (TransducerHypothesis* h : hyps) {
    if (!h->decoder_out.empty()) continue;
    contexts.insert(contexts.end(), h->context.begin(), h->context.end());
    missing.push_back(h);
  }
  if (missing.empty()) return Status::ok();
  std::vector<float> out;
  const int rows = static_cast<int>(missing.size());
  VOXRT_RETURN_IF_ERROR(networks.run_decoder(contexts, rows, out));
  const auto dim = static_cast<std::size_t>(networks.decoder_dim());
  if (out.size() != missing.size() * dim) {
    return invalid_argument("transducer decoder: expected ", rows, " x ", dim, " outputs, found ",
                            out.size(), " values");
  }
  for (std::size_t r = 0; r < missing.size(); ++r)
    missing[r]->decoder_out.assign(out.begin() + static_cast<std::ptrdiff_t>(r * dim),
                                   out.begin() + static_cast<std::ptrdiff_t>((r + 1) * dim));
  return Status::ok();
}

// The joiner on (encoder frame, hypothesis) rows; returns each row's log-softmax.
Status joint_log_probs(TransducerNetworks& networks, const std::vector<float>& encoder_rows,
                       std::span<TransducerHypothesis* const> hyps,
                       std::vector<std::vector<float>>& log_probs) {
  std::vector<float> decoder_rows;
  for (const TransducerHypothesis* h : hyps)
    decoder_rows.insert(decoder_rows.end(), h->decoder_out.begin(), h->decoder_out.end());
  std::vector<float> logits;
  const int rows = static_cast<int>(hyps.size());
  VOXRT_RETURN_IF_ERROR(networks.run_joiner(encoder_rows, decoder_rows, rows, logits));
  const int vocab = networks.vocab_size();
  if (logits.size() != static_cast<std::size_t>(rows) * vocab) {
    return invalid_argument("transducer joiner: expected ", rows, " x ", vocab, " logits, found ",
                            logits.size(), " values");
  }
  log_probs.resize(hyps.size());
  for (int r = 0; r < rows; ++r)
    log_softmax_row(logits.data() + static_cast<std::size_t>(r) * vocab, vocab,
                    log_probs[static_cast<std::size_t>(r)]);
  return Status::ok();
}

}  // namespace

Status TransducerSearchConfig::validate() const {
  if (max_symbols_per_frame < 0 || max_symbols_per_frame > 16) {
    return invalid_argument("transducer search: max_symbols_per_frame must be 0..16 (0: the ",
                            "model's default), got ", max_symbols_per_frame);
  }
  if (beam_width < 1 || beam_width > 64)
    return invalid_argument("transducer search: beam_width must be 1..64, got ", beam_width);
  return Status::ok();
}

std::string TransducerSearchConfig::to_string() const {
  std::ostringstream out;
  out << "max_symbols_per_frame=" << max_symbols_per_frame << " beam_width=" << beam_width;
  return out.str();
}

TransducerStreamSearch::TransducerStreamSearch(std::shared_ptr<const Vocabulary> vocabulary,
                                               TimeBase time_base, TransducerSearchKind kind,
                                               TransducerSearchConfig config, int context_size,
                                               std::shared_ptr<const ContextGraph> hotwords)
    : vocabulary_(std::move(vocabulary)),
      time_base_(time_base),
      kind_(kind),
      config_(config),
      hotwords_(std::move(hotwords)),
      context_size_(context_size),
      unk_id_(vocabulary_->id_of("<unk>")) {
  hyps_.emplace_back();
  reset_state();
}

void TransducerStreamSearch::reset_state() {
  // sherpa-onnx's empty hypothesis: context_size - 1 "no unit" entries and a blank.
  for (TransducerHypothesis& h : hyps_) {
    h.context.assign(static_cast<std::size_t>(context_size_), -1);
    h.context.back() = vocabulary_->blank_id();
    h.decoder_out.clear();
  }
}

const TransducerHypothesis& TransducerStreamSearch::best() const {
  if (kind_ == TransducerSearchKind::kGreedy) return hyps_.front();
  // Length-normalised, as sherpa-onnx picks its result (the context counts as units).
  std::size_t best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < hyps_.size(); ++i) {
    const double units = static_cast<double>(hyps_[i].context.size() + hyps_[i].tokens.size());
    const double score = hyps_[i].log_prob / units;
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  return hyps_[best];
}

long long TransducerStreamSearch::trailing_blank_frames() const {
  const TransducerHypothesis& h = best();
  const long long since = h.last_emit_frame >= 0 ? h.last_emit_frame + 1 : utterance_start_frame_;
  return frames_seen_ - since;
}

void TransducerStreamSearch::accept_skipped_frames(int frames) {
  if (frames > 0) frames_seen_ += frames;
}

DecodingResult TransducerStreamSearch::partial() const {
  const TransducerHypothesis& h = best();
  return make_result(*vocabulary_, h.tokens, time_base_, h.log_prob, false);
}

DecodingResult TransducerStreamSearch::finalize() {
  const TransducerHypothesis& h = best();
  // An unfinished hotword match gives its bonus back.
  const double score = h.log_prob + (hotwords_ ? hotwords_->finalize(h.context_state) : 0.0f);
  return make_result(*vocabulary_, h.tokens, time_base_, score, true);
}

void TransducerStreamSearch::reset_utterance() {
  TransducerHypothesis kept = best();
  kept.tokens.clear();
  kept.log_prob = 0.0;
  kept.context_state = ContextGraph::kRoot;
  kept.last_emit_frame = -1;
  hyps_.clear();
  hyps_.push_back(std::move(kept));
  utterance_start_frame_ = frames_seen_;
}

Status transducer_search_chunk(TransducerNetworks& networks,
                               std::span<TransducerStreamSearch* const> streams,
                               const float* encoder_out, int frames_per_stream,
                               std::span<const int> valid_frames) {
  if (valid_frames.size() != streams.size())
    return invalid_argument("transducer search: ", streams.size(), " streams but ",
                            valid_frames.size(), " frame counts");
  if (streams.empty()) return Status::ok();
  const TransducerSearchKind kind = streams[0]->kind_;
  for (const TransducerStreamSearch* s : streams) {
    if (s->kind_ != kind)
      return invalid_argument("transducer search: a batch mixes greedy and beam streams");
  }
  const int vocab = networks.vocab_size();
  const int blank = networks.blank_id();
  const auto enc_dim = static_cast<std::size_t>(networks.encoder_dim());
  const auto frame_of = [&](std::size_t b, int t) {
    return encoder_out + (b * static_cast<std::size_t>(frames_per_stream) + t) * enc_dim;
  };
  int max_valid = 0;
  for (int v : valid_frames) max_valid = std::max(max_valid, std::min(v, frames_per_stream));
  std::vector<float> encoder_rows;
  std::vector<std::vector<float>> log_probs;
  for (int t = 0; t < max_valid; ++t) {
    std::vector<std::size_t> live;  // streams with a frame t
    for (std::size_t b = 0; b < streams.size(); ++b) {
      if (t < valid_frames[b]) live.push_back(b);
    }
    if (kind == TransducerSearchKind::kGreedy) {
      std::vector<std::size_t> active = live;
      // 0: this search's default, sherpa-onnx's one unit per frame.
      const int max_symbols = std::max(1, streams[0]->config_.max_symbols_per_frame);
      for (int symbol = 0; symbol < max_symbols && !active.empty(); ++symbol) {
        std::vector<TransducerHypothesis*> hyps;
        encoder_rows.clear();
        for (std::size_t b : active) {
          hyps.push_back(&streams[b]->hyps_.front());
          encoder_rows.insert(encoder_rows.end(), frame_of(b, t), frame_of(b, t) + enc_dim);
        }
        VOXRT_RETURN_IF_ERROR(fill_decoder_outputs(networks, hyps));
        VOXRT_RETURN_IF_ERROR(joint_log_probs(networks, encoder_rows, hyps, log_probs));
        std::vector<std::size_t> emitted;
        for (std::size_t r = 0; r < active.size(); ++r) {
          TransducerStreamSearch& s = *streams[active[r]];
          TransducerHypothesis& h = *hyps[r];
          const std::vector<float>& lp = log_probs[r];
          const int unk = s.unk_id_;
          // Hotwords in greedy search: a unit that extends a match competes with its bonus.
          const int chosen =
              s.hotwords_ ? s.hotwords_->greedy_choice(lp, blank, unk, h.context_state)
                          : static_cast<int>(std::max_element(lp.begin(), lp.end()) - lp.begin());
          const long long frame = s.frames_seen_ + t;
          h.log_prob += lp[static_cast<std::size_t>(chosen)];
          if (chosen == blank || chosen == unk) continue;
          if (s.hotwords_) {
            int next = 0;
            h.log_prob += s.hotwords_->forward(h.context_state, chosen, next);
            h.context_state = next;
          }
          h.tokens.push_back({chosen, frame, frame, lp[static_cast<std::size_t>(chosen)]});
          h.last_emit_frame = frame;
          push_context(h.context, chosen);
          h.decoder_out.clear();
          emitted.push_back(active[r]);
        }
        active = std::move(emitted);
      }
      continue;
    }
    // Modified beam search: every hypothesis of every live stream in one joiner call.
    std::vector<TransducerHypothesis*> hyps;
    std::vector<std::size_t> first_row;  // per live stream
    encoder_rows.clear();
    for (std::size_t b : live) {
      first_row.push_back(hyps.size());
      for (TransducerHypothesis& h : streams[b]->hyps_) {
        hyps.push_back(&h);
        encoder_rows.insert(encoder_rows.end(), frame_of(b, t), frame_of(b, t) + enc_dim);
      }
    }
    VOXRT_RETURN_IF_ERROR(fill_decoder_outputs(networks, hyps));
    VOXRT_RETURN_IF_ERROR(joint_log_probs(networks, encoder_rows, hyps, log_probs));
    for (std::size_t i = 0; i < live.size(); ++i) {
      TransducerStreamSearch& s = *streams[live[i]];
      const long long frame = s.frames_seen_ + t;
      const int unk = s.unk_id_;
      const std::size_t rows = s.hyps_.size();
      // The beam_width best (hypothesis, unit) extensions by acoustic score, as sherpa-onnx's
      // TopkIndex; hotword bonuses are added to the chosen ones.
      struct Candidate {
        double score;
        std::size_t hyp;
        int unit;
      };
      std::vector<Candidate> candidates;
      candidates.reserve(rows * static_cast<std::size_t>(vocab));
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<float>& lp = log_probs[first_row[i] + r];
        for (int k = 0; k < vocab; ++k)
          candidates.push_back({s.hyps_[r].log_prob + lp[static_cast<std::size_t>(k)], r, k});
      }
      const std::size_t keep =
          std::min(candidates.size(), static_cast<std::size_t>(s.config_.beam_width));
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                        candidates.end(), [](const Candidate& a, const Candidate& b) {
                          if (a.score != b.score) return a.score > b.score;
                          return a.hyp != b.hyp ? a.hyp < b.hyp : a.unit < b.unit;
                        });
      std::vector<TransducerHypothesis> next;
      std::map<std::vector<int>, std::size_t> index_of;  // unit sequence -> hypothesis
      for (std::size_t c = 0; c < keep; ++c) {
        const Candidate& cand = candidates[c];
        const TransducerHypothesis& prev = s.hyps_[cand.hyp];
        TransducerHypothesis h;
        h.context = prev.context;
        h.tokens = prev.tokens;
        h.context_state = prev.context_state;
        h.last_emit_frame = prev.last_emit_frame;
        double bonus = 0.0;
        if (cand.unit != blank && cand.unit != unk) {
          const float lp = log_probs[first_row[i] + cand.hyp][static_cast<std::size_t>(cand.unit)];
          h.tokens.push_back({cand.unit, frame, frame, lp});
          h.last_emit_frame = frame;
          push_context(h.context, cand.unit);
          if (s.hotwords_) {
            int next_state = 0;
            bonus = s.hotwords_->forward(prev.context_state, cand.unit, next_state);
            h.context_state = next_state;
          }
        } else {
          h.decoder_out = prev.decoder_out;  // same context: same decoder output
        }
        h.log_prob = cand.score + bonus;
        std::vector<int> key;
        key.reserve(h.tokens.size());
        for (const TokenSpan& token : h.tokens) key.push_back(token.id);
        auto [it, inserted] = index_of.emplace(std::move(key), next.size());
        if (inserted) {
          next.push_back(std::move(h));
        } else {
          TransducerHypothesis& same = next[it->second];
          same.log_prob = log_add(same.log_prob, h.log_prob);
        }
      }
      s.hyps_ = std::move(next);
    }
  }
  for (std::size_t b = 0; b < streams.size(); ++b)
    streams[b]->frames_seen_ += std::max(0, std::min(valid_frames[b], frames_per_stream));
  return Status::ok();
}

}  // namespace voxrt::decode
