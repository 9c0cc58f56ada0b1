// The CTC family (docs/model_contract.md, "ctc_streaming"): one engine that maps a chunk of
// feature frames and the stream's states (kept in the engine's slot pool) to log-probabilities,
// decoded per stream by greedy CTC or the prefix beam search (with LM, lexicon and hotwords), as
// each stream's resolved decoding says. A whole utterance in one call with fresh states is the
// offline use of the same engine. An engine may also take each row's chunk length
// (voxrt.ctc.length_input: int64 [batch], the chunk's frames that hold audio, so a model that
// masks by length, as NeMo's cache-aware encoders do, masks the padding of a last chunk).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "audio/feature_config.h"
#include "decode/arpa_lm.h"
#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "decode/lexicon.h"
#include "decode/vocabulary.h"
#include "runtime/state_pool.h"
#include "stream/model_family.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

class CtcModel final : public ModelFamily, public std::enable_shared_from_this<CtcModel> {
 public:
  // `engine`: loaded from `engine_path` (named in errors); `metadata`: the contract's keys (the
  // engine's own, or a bundle's); file names in it are relative to `model_dir`.
  static Expected<std::shared_ptr<CtcModel>> create(
      std::shared_ptr<const Engine> engine, const std::map<std::string, std::string>& metadata,
      const std::string& engine_path, const std::string& model_dir, const RecognizerConfig& config);

  std::string_view name() const override { return "ctc_streaming"; }
  const audio::FeatureConfig& feature_config() const override { return feature_config_; }
  const ChunkLayout& chunk_layout() const override { return layout_; }
  const decode::TimeBase& time_base() const override { return time_base_; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  int vocab_size() const override { return vocabulary_->size(); }
  const decode::Vocabulary& vocabulary() const override { return *vocabulary_; }
  DeviceKind device() const override;
  int streams_open() const override { return pool_->in_use(); }
  int max_batch() const override { return max_batch_; }
  bool hotwords_need_beam_search() const override { return true; }
  bool has_lm() const override { return lm_ != nullptr; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

 private:
  friend class CtcStream;
  CtcModel() = default;

  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  std::unique_ptr<StatePool> pool_;
  audio::FeatureConfig feature_config_;
  ChunkLayout layout_;
  decode::TimeBase time_base_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  std::shared_ptr<const decode::ArpaLm> lm_;
  std::shared_ptr<const decode::Lexicon> lexicon_;  // the LM's words, for lexicon_only
  int feature_dim_ = 0;
  int max_batch_ = 1;
  // Positions among the pool's non-state inputs; length_input_ -1 when the engine has none.
  int features_input_ = 0;
  int length_input_ = -1;
};

}  // namespace voxrt::stream
