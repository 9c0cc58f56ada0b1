#include "decode/stateful_transducer_search.h"

#include <algorithm>
#include <cmath>

namespace voxrt::decode {
namespace {

int argmax(const float* values, int count) {
  return static_cast<int>(std::max_element(values, values + count) - values);
}

// log-softmax of values[k] over values[0..count).
float log_posterior(const float* values, int count, int k) {
  const float top = *std::max_element(values, values + count);
  double sum = 0.0;
  for (int v = 0; v < count; ++v) sum += std::exp(static_cast<double>(values[v] - top));
  return values[k] - top - static_cast<float>(std::log(sum));
}

}  // namespace

StatefulTransducerStreamSearch::StatefulTransducerStreamSearch(
    std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base, int max_symbols_per_frame,
    int state_size, std::shared_ptr<const ContextGraph> hotwords)
    : vocabulary_(std::move(vocabulary)),
      time_base_(time_base),
      max_symbols_(max_symbols_per_frame),
      hotwords_(std::move(hotwords)),
      unk_id_(vocabulary_->id_of("<unk>")),
      state_(static_cast<std::size_t>(state_size), 0.0f) {
  reset_state();
}

void StatefulTransducerStreamSearch::reset_state() {
  // NeMo starts from the blank (its embedding is the padding row: zeros) with zero (h, c).
  last_unit_ = vocabulary_->blank_id();
  std::fill(state_.begin(), state_.end(), 0.0f);
  decoder_out_.clear();
  next_state_.clear();
}

void StatefulTransducerStreamSearch::accept_skipped_frames(int frames) {
  if (frames > 0) frames_seen_ += frames;
}

long long StatefulTransducerStreamSearch::trailing_blank_frames() const {
  const long long since = last_emit_frame_ >= 0 ? last_emit_frame_ + 1 : utterance_start_frame_;
  return std::max(0LL, frames_seen_ - since);
}

DecodingResult StatefulTransducerStreamSearch::partial() const {
  return make_result(*vocabulary_, tokens_, time_base_, log_prob_, false);
}

DecodingResult StatefulTransducerStreamSearch::finalize() {
  // An unfinished hotword match gives its bonus back.
  const double score = log_prob_ + (hotwords_ ? hotwords_->finalize(context_state_) : 0.0f);
  return make_result(*vocabulary_, tokens_, time_base_, score, true);
}

void StatefulTransducerStreamSearch::reset_utterance() {
  tokens_.clear();
  log_prob_ = 0.0;
  context_state_ = ContextGraph::kRoot;
  last_emit_frame_ = -1;
  utterance_start_frame_ = frames_seen_;
}

Status stateful_transducer_greedy(StatefulTransducerNetworks& networks,
                                  std::span<StatefulTransducerStreamSearch* const> streams,
                                  const float* encoder_out, int frames_per_stream,
                                  std::span<const int> valid_frames) {
  if (valid_frames.size() != streams.size()) {
    return invalid_argument("transducer search: ", streams.size(), " streams but ",
                            valid_frames.size(), " frame counts");
  }
  const int vocab = networks.vocab_size();
  const int blank = networks.blank_id();
  const std::vector<int>& durations = networks.durations();
  const bool tdt = !durations.empty();
  const int width = vocab + static_cast<int>(durations.size());
  const auto state_size = static_cast<std::size_t>(networks.state_size());
  const auto dec_dim = static_cast<std::size_t>(networks.decoder_dim());
  const auto enc_dim = static_cast<std::size_t>(networks.encoder_dim());
  // Each stream's position in its frames and the steps taken at that frame.
  std::vector<int> t(streams.size(), 0);
  std::vector<int> symbols(streams.size(), 0);
  std::vector<std::size_t> active;
  std::vector<std::int64_t> units;
  std::vector<float> states, decoder_out, next_states, enc_rows, dec_rows, logits;
  for (;;) {
    active.clear();
    for (std::size_t b = 0; b < streams.size(); ++b)
      if (t[b] < std::min(valid_frames[b], frames_per_stream)) active.push_back(b);
    if (active.empty()) break;
    // The decoder for the streams that emitted (or start): their last unit and state.
    units.clear();
    states.clear();
    std::vector<std::size_t> stale;
    for (std::size_t b : active) {
      StatefulTransducerStreamSearch& s = *streams[b];
      if (!s.decoder_out_.empty()) continue;
      if (s.state_.size() != state_size) {
        return invalid_argument("transducer search: a stream's state has ", s.state_.size(),
                                " values, the prediction network's ", state_size);
      }
      units.push_back(s.last_unit_);
      states.insert(states.end(), s.state_.begin(), s.state_.end());
      stale.push_back(b);
    }
    if (!stale.empty()) {
      const int rows = static_cast<int>(stale.size());
      VOXRT_RETURN_IF_ERROR(networks.run_decoder(units, states, rows, decoder_out, next_states));
      if (decoder_out.size() != stale.size() * dec_dim ||
          next_states.size() != stale.size() * state_size) {
        return invalid_argument("transducer decoder: expected ", rows, " x ", dec_dim,
                                " outputs and ", rows, " x ", state_size, " states, found ",
                                decoder_out.size(), " and ", next_states.size(), " values");
      }
      for (std::size_t r = 0; r < stale.size(); ++r) {
        StatefulTransducerStreamSearch& s = *streams[stale[r]];
        s.decoder_out_.assign(decoder_out.begin() + static_cast<std::ptrdiff_t>(r * dec_dim),
                              decoder_out.begin() + static_cast<std::ptrdiff_t>((r + 1) * dec_dim));
        s.next_state_.assign(
            next_states.begin() + static_cast<std::ptrdiff_t>(r * state_size),
            next_states.begin() + static_cast<std::ptrdiff_t>((r + 1) * state_size));
      }
    }
    // The joiner for every active stream at its frame.
    enc_rows.clear();
    dec_rows.clear();
    for (std::size_t b : active) {
      const float* frame = encoder_out + (b * static_cast<std::size_t>(frames_per_stream) +
                                          static_cast<std::size_t>(t[b])) *
                                             enc_dim;
      enc_rows.insert(enc_rows.end(), frame, frame + enc_dim);
      dec_rows.insert(dec_rows.end(), streams[b]->decoder_out_.begin(),
                      streams[b]->decoder_out_.end());
    }
    const int rows = static_cast<int>(active.size());
    VOXRT_RETURN_IF_ERROR(networks.run_joiner(enc_rows, dec_rows, rows, logits));
    if (logits.size() != active.size() * static_cast<std::size_t>(width)) {
      return invalid_argument("transducer joiner: expected ", rows, " x ", width,
                              " logits (units and durations), found ", logits.size(), " values");
    }
    for (std::size_t r = 0; r < active.size(); ++r) {
      const std::size_t b = active[r];
      StatefulTransducerStreamSearch& s = *streams[b];
      const float* row = logits.data() + r * static_cast<std::size_t>(width);
      const int k = s.hotwords_ ? s.hotwords_->greedy_choice(
                                      std::span<const float>(row, static_cast<std::size_t>(vocab)),
                                      blank, s.unk_id_, s.context_state_)
                                : argmax(row, vocab);
      if (k != blank) {
        const float lp = log_posterior(row, vocab, k);
        const long long frame = s.frames_seen_ + t[b];
        s.tokens_.push_back(TokenSpan{k, frame, frame, lp});
        s.log_prob_ += lp;
        if (s.hotwords_ && k != s.unk_id_) {
          int next = ContextGraph::kRoot;
          s.log_prob_ += s.hotwords_->forward(s.context_state_, k, next);
          s.context_state_ = next;
        }
        s.last_emit_frame_ = frame;
        s.last_unit_ = k;
        s.state_ = s.next_state_;
        s.decoder_out_.clear();
      }
      ++symbols[b];
      if (!tdt) {
        // RNN-T: the blank, or the frame's last allowed unit, moves to the next frame.
        if (k == blank || symbols[b] >= s.max_symbols_) {
          ++t[b];
          symbols[b] = 0;
        }
        continue;
      }
      const int skip = durations[static_cast<std::size_t>(argmax(row + vocab, width - vocab))];
      // NeMo would repeat a blank of duration 0 with the same inputs until the limit.
      if (k == blank && skip == 0) symbols[b] = s.max_symbols_;
      t[b] += skip;
      if (skip > 0 || symbols[b] >= s.max_symbols_) {
        if (symbols[b] >= s.max_symbols_) ++t[b];
        symbols[b] = 0;
      }
    }
  }
  for (std::size_t b = 0; b < streams.size(); ++b)
    streams[b]->frames_seen_ += std::clamp(valid_frames[b], 0, frames_per_stream);
  return Status::ok();
}

}  // namespace voxrt::decode
