// Whisper's timestamp tokens (docs/model_contract.md "encoder_decoder"): when a stream decodes
// with timestamps, the prompt leaves out <|notimestamps|> and the model says
// <|t0|> text <|t1|><|t1'|> text <|t2|> ..., each timestamp an id from <|0.00|> on, 0.02 s apart
// from the window's start. TimestampRules constrains the logits so that the tokens keep that
// shape, as OpenAI Whisper's decoder does; split_segments turns a window's tokens into segments.
#pragma once

#include <span>
#include <vector>

namespace voxrt::stream {

// Seconds between two timestamp tokens.
inline constexpr double kTimestampStepSeconds = 0.02;
// The first timestamp of a window is at most this late (OpenAI's max_initial_timestamp).
inline constexpr double kMaxInitialTimestampSeconds = 1.0;

class TimestampRules {
 public:
  // Ids from `timestamp_begin_id` to `vocab_size` - 1 are timestamps; ids below `eos_id` are
  // text.
  TimestampRules(int timestamp_begin_id, int eos_id, int vocab_size);

  // `logits` (vocab values) for the token after `sampled` (the window's tokens after the prompt),
  // after suppression; changed in place:
  // - the first token is a timestamp, at most kMaxInitialTimestampSeconds;
  // - timestamps come in pairs: after a lone timestamp (one that follows text, closing a
  //   segment) comes a timestamp (the next segment's start) or end-of-text, no text; after a pair
  //   (or the first timestamp) comes text or end-of-text;
  // - timestamps never go back: each is after the one before, but a segment's start may equal
  //   the end of the segment before (so no segment has zero length);
  // - when the timestamps together are more likely than the most likely text token, a timestamp
  //   it is (OpenAI's rule: otherwise a long tail of timestamps loses to one text token).
  void apply(std::span<const int> sampled, float* logits) const;

  int timestamp_begin_id() const { return timestamp_begin_id_; }
  bool is_timestamp(int id) const { return id >= timestamp_begin_id_; }
  // Seconds from the window's start that a timestamp id stands for.
  double seconds(int id) const { return (id - timestamp_begin_id_) * kTimestampStepSeconds; }

 private:
  int timestamp_begin_id_;
  int eos_id_;
  int vocab_size_;
  int max_initial_index_;
};

// One segment of a window: tokens [first_token, end_token) of the window's tokens (its
// timestamps included), and its times in seconds from the window's start.
struct WindowSegment {
  int first_token = 0;
  int end_token = 0;
  double start_s = 0.0;
  double end_s = 0.0;
};

// The segments of a window's tokens (without end-of-text), as OpenAI's transcribe cuts them:
// - a pair of timestamps ends one segment and starts the next; each segment runs from its first
//   timestamp to its last;
// - the tokens after the last pair, when the window ends on one lone timestamp, are a segment
//   up to it; when they end in text (the window ends mid-segment), they are a segment up to
//   `window_s`. OpenAI instead starts the next window at that segment's start and decodes it
//   again; voxrt's windows are consecutive 30 s pieces, so it is cut here;
// - without any pair, the tokens are one segment from 0 to the last timestamp (when that is not
//   <|0.00|>), else to `window_s`.
std::vector<WindowSegment> split_segments(std::span<const int> tokens, const TimestampRules& rules,
                                          double window_s);

}  // namespace voxrt::stream
