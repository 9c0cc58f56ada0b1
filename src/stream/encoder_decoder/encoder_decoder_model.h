// The encoder_decoder family (Whisper architecture as Hugging Face optimum exports it,
// docs/model_contract.md "encoder_decoder"): the driver cuts a stream's Whisper log-mel frames
// (audio/whisper_log_mel.h) into 30 s windows of 3000 frames (a last window padded with
// silence); each window is normalised as Whisper does, goes through the encoder once, and is
// decoded with the KV cache: decoder_model on the prompt, then decoder_with_past one token per
// step, the past kept between steps. The search is greedy (window_search.h) or a beam search
// (beam_search.h: one row per beam, the cache reordered by the rows the beams extend), with or
// without timestamp tokens (timestamp_rules.h; segments with times in the result). A
// multilingual model built without a language detects each stream's language from its first
// decoded window (one decoder call on <|startoftranscript|>, the most likely language token) and
// decodes all its windows with that language's prompt. A window's prompt holds the stream's
// previous text and the task (window_prompt.h); a window whose result fails OpenAI's checks is
// decoded again at the next temperature (fallback_policy.h). The windows of every stream in one
// run_batch share one encoder call, and those that decode alike (the same search, temperature
// and prompt length) one decoder call per step; a row leaves the batch when its window ends, so
// a stream's tokens do not depend on its batch mates. A stream's text is the text of its windows
// in order.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "decode/byte_level_bpe.h"
#include "decode/byte_level_bpe_encoder.h"
#include "decode/vocabulary.h"
#include "stream/bundle_manifest.h"
#include "stream/encoder_decoder/beam_search.h"
#include "stream/encoder_decoder/decoding_options.h"
#include "stream/encoder_decoder/fallback_policy.h"
#include "stream/encoder_decoder/window_search.h"
#include "stream/model_family.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

class EncoderDecoderStream;

class EncoderDecoderModel final : public ModelFamily,
                                  public std::enable_shared_from_this<EncoderDecoderModel> {
 public:
  static Expected<std::shared_ptr<EncoderDecoderModel>> create(const BundleManifest& manifest,
                                                               const std::string& folder,
                                                               const RecognizerConfig& config);

  std::string_view name() const override { return "encoder_decoder"; }
  const audio::FeatureConfig& feature_config() const override { return feature_config_; }
  const ChunkLayout& chunk_layout() const override { return layout_; }
  const decode::TimeBase& time_base() const override { return time_base_; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  int vocab_size() const override { return contract_.vocab_size; }
  const decode::Vocabulary& vocabulary() const override { return *vocabulary_; }
  DeviceKind device() const override;
  int streams_open() const override { return streams_open_; }
  int max_batch() const override { return max_batch_; }
  bool hotwords_need_beam_search() const override { return false; }
  bool has_lm() const override { return false; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;
  // Growing-window partials: a window that is still filling, decoded as it is so far (padded
  // with silence) at the stream's first temperature, without fallback; the language of a stream
  // that has none yet is detected for this decode only. The stream's state does not change:
  // its partial shows the text until the window is decoded whole.
  bool decodes_filling_chunks() const override { return true; }
  Status run_partial_batch(std::span<const ChunkInput> batch, int frames) override;

  // Engine calls since creation (tests and benchmarks).
  struct Calls {
    long long encoder = 0;
    long long decoder = 0;             // prompt calls
    long long language_detection = 0;  // decoder calls on <|startoftranscript|> alone
    long long decoder_with_past = 0;
    long long fallback_decodings = 0;  // windows decoded again at a higher temperature
    long long partial_windows = 0;     // filling windows decoded for partials (run_partial_batch)
  };
  const Calls& calls() const { return calls_; }

 private:
  friend class EncoderDecoderStream;
  EncoderDecoderModel() = default;
  // Decodes windows whose encoder states are `hidden` [B, S, d]: row b starts from prompts[b]
  // (all of one length) and searches[b] chooses its tokens.
  Status decode_windows(const Tensor& hidden, const std::vector<std::vector<int>>& prompts,
                        std::span<WindowDecoding* const> searches);
  // The most likely language token of each row of `hidden` (OpenAI Whisper's detection: the
  // decoder on <|startoftranscript|> alone, the logits of the language tokens only).
  Expected<std::vector<int>> detect_languages(const Tensor& hidden);
  // `prompt`'s BPE tokens as OpenAI encodes an initial prompt (empty for an empty prompt);
  // errors (a model that takes no prompt) start with `where`.
  Expected<std::vector<int>> encode_initial_prompt(const std::string& prompt,
                                                   const std::string& where) const;
  // The encoder states [rows, S, d] of the windows `rows` of `batch` (each normalised as
  // Whisper does and transposed to [mels, frames]).
  Expected<Tensor> encode_windows(std::span<const ChunkInput> batch, std::span<const int> rows,
                                  int frames);
  // The text of `tokens`, timestamps left out (a tokenizer may not mark them special).
  Expected<std::string> text_of(std::span<const int> tokens) const;
  // Decodes the windows `rows` (rows of `hidden`) at attempt `attempt` of the fallback: prompts
  // are per row of `hidden`; searches[row] gets each window's search.
  Status decode_attempt(const Tensor& hidden, std::span<const int> rows,
                        const std::vector<EncoderDecoderStream*>& streams,
                        const std::vector<std::vector<int>>& prompts, int attempt,
                        std::vector<std::unique_ptr<WindowDecoding>>& searches);

  std::shared_ptr<const Engine> encoder_;
  std::shared_ptr<const Engine> decoder_;
  std::shared_ptr<const Engine> decoder_with_past_;
  std::unique_ptr<ExecutionContext> encoder_context_;
  std::unique_ptr<ExecutionContext> decoder_context_;
  std::unique_ptr<ExecutionContext> step_context_;
  EncoderDecoderContract contract_;
  std::shared_ptr<const WindowRules> rules_;
  // The rules with timestamps; null when the model has no timestamp tokens.
  std::shared_ptr<const WindowRules> timestamp_rules_;
  std::shared_ptr<const decode::ByteLevelBpeDecoder> tokenizer_;
  EncoderDecoderOptions options_;
  // The recognizer's initial prompt's BPE tokens (the previous text of every stream without a
  // prompt of its own starts with them).
  std::vector<int> initial_prompt_tokens_;
  // Encodes initial prompts; null for a model without <|startofprev|> or merges.txt.
  std::shared_ptr<const decode::ByteLevelBpeEncoder> prompt_encoder_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  audio::FeatureConfig feature_config_;
  ChunkLayout layout_;
  decode::TimeBase time_base_;
  std::map<std::string, std::string> metadata_;
  int max_batch_ = 1;
  // Rows decoder_with_past takes in one call: windows times beams (voxrt build --max-beam).
  int max_step_rows_ = 1;
  int max_streams_ = 1;
  int streams_open_ = 0;
  // The decoder engines' outputs by position: logits, then the presents the step engine takes.
  int decoder_logits_ = -1;
  int step_logits_ = -1;
  // decoder_with_past's inputs: input_ids's position; for each past input, where its value
  // comes from: the decoder's output (prompt) and the step engine's output (self-attention)
  // or -1 (cross-attention: kept from the decoder's present.N.encoder.*).
  int step_ids_input_ = -1;
  struct PastSource {
    int step_input = -1;
    int decoder_output = -1;
    int step_output = -1;
  };
  std::vector<PastSource> past_;
  Calls calls_;
};

}  // namespace voxrt::stream
