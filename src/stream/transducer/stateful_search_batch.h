// The searches of one batch of a stateful transducer family (NeMo's offline transducers,
// torchaudio's Emformer): greedy and modified-beam streams may share an encoder call, and each
// search then runs once over its own streams' frames.
#pragma once

#include <span>

#include "decode/stateful_transducer_beam.h"
#include "decode/stateful_transducer_search.h"
#include "stream/model_family.h"

namespace voxrt::stream {

// One stream of the batch: exactly one of `greedy` / `beam`, its encoder frames (frames_per_stream
// rows of the encoder's width, frame-major) and how many of them count.
struct StatefulSearchRow {
  decode::StatefulTransducerStreamSearch* greedy = nullptr;
  decode::StatefulTransducerBeamSearch* beam = nullptr;
  const float* frames = nullptr;
  int valid_frames = 0;
};

// The row of `stream`, a stream that a stateful family opened (search_stream.h over either
// search), with its encoder frames.
StatefulSearchRow stateful_search_row(FamilyStream& stream, const float* frames, int valid_frames);

Status run_stateful_searches(decode::StatefulTransducerNetworks& networks,
                             std::span<const StatefulSearchRow> rows, int frames_per_stream);

}  // namespace voxrt::stream
