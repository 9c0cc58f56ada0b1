// The offline variant of the CTC family ("ctc_offline", docs/model_contract.md): one engine that
// maps a whole utterance's features and their length to log-probabilities, as NeMo's
// Conformer-CTC / FastConformer-CTC exports do (audio_signal [B, n_mels, T], length [B] ->
// logprobs [B, T', vocab]). Its front end normalises over the utterance (audio/nemo_features.h),
// so the driver hands it raw samples (FeatureType::kWaveform, one hop per frame) in segments of
// up to voxrt.offline.max_frames hops; each segment is one utterance: features, one engine call
// batched across streams (each stream's own length), and a fresh search. Nothing is decoded
// until a segment is complete (the end of the input, or max_frames hops).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "audio/feature_config.h"
#include "decode/arpa_lm.h"
#include "decode/lexicon.h"
#include "decode/vocabulary.h"
#include "stream/model_family.h"
#include "stream/offline_segments.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

class OfflineCtcModel final : public ModelFamily,
                              public std::enable_shared_from_this<OfflineCtcModel> {
 public:
  static Expected<std::shared_ptr<OfflineCtcModel>> create(
      std::shared_ptr<const Engine> engine, const std::map<std::string, std::string>& metadata,
      const std::string& engine_path, const std::string& model_dir, const RecognizerConfig& config);

  std::string_view name() const override { return "ctc_offline"; }
  const audio::FeatureConfig& feature_config() const override {
    return segments_->feature_config();
  }
  const ChunkLayout& chunk_layout() const override { return layout_; }
  const decode::TimeBase& time_base() const override { return time_base_; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  int vocab_size() const override { return vocabulary_->size(); }
  const decode::Vocabulary& vocabulary() const override { return *vocabulary_; }
  DeviceKind device() const override;
  int streams_open() const override { return streams_open_.load(); }
  int max_batch() const override { return max_batch_; }
  bool hotwords_need_beam_search() const override { return true; }
  bool has_lm() const override { return lm_ != nullptr; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

 private:
  friend class OfflineCtcStream;
  OfflineCtcModel() = default;

  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  std::optional<OfflineSegmentFrontEnd> segments_;
  ChunkLayout layout_;
  decode::TimeBase time_base_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  std::shared_ptr<const decode::ArpaLm> lm_;
  std::shared_ptr<const decode::Lexicon> lexicon_;
  std::string features_input_;
  std::string length_input_;
  std::string output_;
  int max_streams_ = 0;
  int max_batch_ = 1;
  std::atomic<int> streams_open_{0};
};

}  // namespace voxrt::stream
