// The interface between the family-independent stream driver (recognizer.h: audio in, features,
// VAD and wake word, chunking, batching, endpointing, results out) and a model family (ctc/,
// transducer/, ...): what the model needs as input, how it runs a batch of chunks and how its
// per-stream search reports text (STYLE.md 10, 17). Adding a family adds a folder that implements
// these two classes and one line in model_families.cpp.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audio/feature_config.h"
#include "decode/decoding_result.h"
#include "decode/vocabulary.h"
#include "voxrt/builder.h"
#include "voxrt/status.h"

namespace voxrt::stream {

struct StreamOptions;
struct RecognizerConfig;
struct ResolvedDecoding;

// How the driver cuts a stream's feature frames into model chunks.
struct ChunkLayout {
  // Feature frames per model call, including the lookahead (right context).
  int chunk_frames = 0;
  // New frames each call consumes; chunk_frames - shift_frames frames are seen again next call.
  int shift_frames = 0;
  // The fewest frames the engine accepts: a stream's last, shorter chunk is padded to at least
  // this many (and then to a multiple of the subsampling, up to chunk_frames).
  int min_chunk_frames = 1;
  // Feature frames per output frame.
  int subsampling = 1;
  // The feature frame the padding of a last chunk is made of (feature_dim values): what the
  // model saw for silence (zeros = the mean for normalised features; the log floor otherwise).
  std::vector<float> pad_frame;
};

// The search's counters that the driver's endpoint rules read.
struct DecoderProgress {
  long long utterance_frames = 0;       // output frames in the current utterance
  long long trailing_blank_frames = 0;  // output frames since the last emitted unit
  bool has_tokens = false;              // the utterance has decoded a unit
};

// One stream's model state (its slot) and search state (hypotheses). Created by its family;
// only the driver's thread that advances the stream touches it.
class FamilyStream {
 public:
  virtual ~FamilyStream() = default;
  // `output_frames` frames that skipped the model (silence under the VAD, audio before the
  // wake word): the search sees them as blank, so times and endpoints stay right.
  virtual Status accept_skipped_frames(int output_frames) = 0;
  virtual DecoderProgress progress() const = 0;
  virtual decode::DecodingResult partial() const = 0;
  virtual decode::DecodingResult finalize() = 0;
  // Starts a new utterance after an endpoint; frame numbers keep counting.
  virtual void reset_utterance() = 0;
  // Back to a fresh stream's model state (zero states, as at the stream's start), for the
  // driver's state reset at endpoints (StateAtEndpoint::kReset).
  virtual Status reset_state() = 0;
};

// One stream's chunk in a batch: `frames` x feature_dim values, of which the first
// `valid_output_frames` output frames count (the rest come from the padding of a last chunk).
// `valid_frames` input frames hold audio (a family that computes its own features from raw
// samples, ctc_offline, must not see the padding as audio).
struct ChunkInput {
  FamilyStream* stream = nullptr;
  const float* features = nullptr;
  int valid_output_frames = 0;
  int valid_frames = 0;
};

// A loaded model of one family: its engines, slot pools and vocabulary, shared by its streams.
class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  // The family name written in the model ("ctc_streaming", "transducer", ...).
  virtual std::string_view name() const = 0;
  virtual const audio::FeatureConfig& feature_config() const = 0;
  virtual const ChunkLayout& chunk_layout() const = 0;
  // Output frames to times, with the model's word delays (voxrt.word_start/end_delay_ms).
  virtual const decode::TimeBase& time_base() const = 0;
  // The model contract's keys (the engine's metadata, or the bundle's).
  virtual const std::map<std::string, std::string>& metadata() const = 0;
  virtual int vocab_size() const = 0;
  // The units the search emits (hotword phrases are normalised and spelled with them).
  virtual const decode::Vocabulary& vocabulary() const = 0;
  // Where the engines run (they were built for one target: voxrt build --device).
  virtual DeviceKind device() const = 0;
  virtual int streams_open() const = 0;
  // Streams per run_batch call: the config's max_batch, or for 0 the largest batch the engines'
  // profiles admit, at most RecognizerConfig::kDefaultMaxBatch (batch_limit.h).
  virtual int max_batch() const = 0;
  // Whether hotwords (StreamOptions::hotwords) need the beam decoder; else greedy takes them too.
  virtual bool hotwords_need_beam_search() const = 0;
  // Whether streams can decode with the config's LM (loaded at creation; families without LM
  // support refuse an lm_path there).
  virtual bool has_lm() const = 0;
  // A stream that decodes as `decoding` says (the driver resolved it from `options`, the config
  // and the model's tuned values) with `options.hotwords` already normalised to the units.
  // Errors (a full slot pool: kResourceExhausted; options this family cannot honour) are values.
  virtual Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                              const ResolvedDecoding& decoding) = 0;
  // Runs one chunk of `frames` feature frames for each stream of `batch` (distinct streams,
  // at most the config's max_batch) and advances their searches. A stream's results must not
  // depend on which other streams share the batch.
  virtual Status run_batch(std::span<const ChunkInput> batch, int frames) = 0;
  // Growing-window partials, for families whose chunks fill slowly (encoder_decoder's 30 s
  // windows): whether run_partial_batch decodes a chunk that is still filling.
  virtual bool decodes_filling_chunks() const { return false; }
  // Decodes each stream's chunk so far (its frames padded as a last chunk to `frames`) for its
  // partial result only: nothing that later chunks or the final read may change;
  // FamilyStream::partial() shows the result until the chunk itself runs in run_batch.
  virtual Status run_partial_batch(std::span<const ChunkInput> batch, int frames) {
    (void)batch;
    (void)frames;
    return unsupported(name(), ": no partial decodes of a chunk that is still filling");
  }
};

// Opens the model that config.engine_path names: an engine file (its voxrt.model_family
// metadata says the family) or an engine bundle folder written by `voxrt build --model-dir`
// (bundle.json says it). Errors name the file and the key.
Expected<std::shared_ptr<ModelFamily>> load_model_family(const RecognizerConfig& config);

}  // namespace voxrt::stream
