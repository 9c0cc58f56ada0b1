// NeMo's cache-aware streaming FastConformer encoder as NeMo's export with cache support writes it
// (set_export_config cache_support; sherpa-onnx's scripts/nemo/fast-conformer-hybrid-transducer-ctc
// export-onnx-ctc.py and export-onnx-transducer.py run it, and add their metadata): one step of
// NeMo's cache-aware streaming loop,
//   inputs  audio_signal [B, n_mels, T] (T = window_size = pre-encode cache + chunk), length [B]
//           int64, cache_last_channel [B, layers, cache, d_model], cache_last_time [B, layers,
//           d_model, kernel - 1], cache_last_channel_len [B] int64
//   outputs the CTC model's logprobs [B, T', classes] or the encoder's outputs [B, D, T'],
//           encoded_lengths [B], and the caches' *_next (cache_last_channel_next,
//           cache_last_time_next, cache_last_channel_next_len)
// with metadata window_size, chunk_shift, subsampling_factor, normalize_type and
// cache_last_{channel,time}_dim{1,2,3}. Shared by the CTC (nemo_cache_aware_ctc.cpp) and
// transducer (nemo_cache_aware_transducer.cpp) imports.
//
// The import maps it onto a streaming family by rewriting the graph's edges, never its body:
//   - features [B, chunk_shift, n_mels] (the driver's frames) replace audio_signal; the
//     window_size - chunk_shift frames before them (NeMo's pre-encode cache) become a state,
//     `pre_encode_cache` [B, pre, n_mels] -> `pre_encode_cache_next` (the window's last `pre`
//     frames), zeros for a new stream as NeMo's first chunk has; the window is transposed to
//     NeMo's [B, n_mels, T];
//   - `chunk_length` [B] int64 (the chunk's frames that hold audio, fed by the family) + pre
//     replaces length, so the padding of a stream's last chunk is masked as NeMo's streaming
//     buffer masks a stream shorter than its batch;
//   - the three caches are state pairs (already batch-first; their cache axes, dynamic in the
//     export, fixed from the cache_last_*_dim metadata);
//   - encoded_lengths is dropped: the driver counts a chunk's output frames as ceil(audio frames /
//     subsampling), which is NeMo's causal dw_striding length minus drop_extra_pre_encoded;
//   - the encoder's outputs [B, D, T'] are transposed to frames [B, T', D] (same name).
// The front end is NeMo's log-mel without normalisation (audio/nemo_log_mel.h): the streaming
// models are trained with normalize NA; a per_feature or all_features model cannot stream and is
// refused.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "model_import/icefall_encoder.h"
#include "model_import/import_support.h"

namespace voxrt::model_import {

// The names the rewritten encoder's non-state inputs get.
inline constexpr const char* kNemoCacheAwareFeaturesInput = "features";
inline constexpr const char* kNemoChunkLengthInput = "chunk_length";

struct NemoCacheAwareEncoder {
  std::string file;
  std::unique_ptr<ir::Graph> graph;  // rewritten
  std::string output;                // its non-state output
  std::int64_t output_dim = 0;       // classes (CTC) or D (encoder)
  std::string model_type;
  int n_mels = 0;
  int window_frames = 0;      // window_size
  int chunk_frames = 0;       // chunk_shift
  int pre_encode_frames = 0;  // window_size - chunk_shift
  int subsampling = 0;
  // (input, output) state pairs: the pre-encode cache, then NeMo's three caches.
  std::vector<std::pair<std::string, std::string>> states;

  // The streaming contract's keys: nemo_log_mel features, chunk = shift = chunk_shift, the
  // subsampling, zero padding, voxrt.state_pairs.
  std::map<std::string, std::string> streaming_contract() const;
  // The engine's build: the states, one profile of 1..max_batch whole chunks.
  BuilderConfig build_config(const ModelDirImportOptions& options) const;
  // A line for the import report.
  std::string describe() const;
};

// The sizes the export's shapes leave open: sherpa-onnx's layout writes them as metadata_props,
// NeMo's own layout leaves them in model_config.yaml (nemo_streaming_config.h).
struct NemoCacheAwareSizes {
  int window_frames = 0;  // chunk + pre-encode cache feature frames
  int chunk_frames = 0;   // the chunk's new feature frames (NeMo's shift_size)
  int subsampling = 0;
  // The caches' non-batch dims: [layers, last_channel_cache_size, d_model] and
  // [layers, d_model, conv cache] (batch-first, as NeMo's forward_for_export takes them).
  std::array<int, 3> cache_last_channel_dims{};
  std::array<int, 3> cache_last_time_dims{};
  std::string source;  // where they were read, for errors
};

// Whether `onnx_file`'s graph takes NeMo's caches (reads the file).
bool is_nemo_cache_aware_export(const std::string& onnx_file);

// `output`: "logprobs" (CTC, [B, T, classes] kept) or "outputs" (encoder, `channels_first_output`:
// [B, D, T] transposed to [B, T, D]). `sizes`: nullptr reads them (and normalize_type) from
// sherpa-onnx's metadata. Errors name the file and say what was expected and found.
Expected<NemoCacheAwareEncoder> read_nemo_cache_aware_encoder(
    const std::string& file, const std::string& output, bool channels_first_output,
    const NemoCacheAwareSizes* sizes = nullptr);

}  // namespace voxrt::model_import
