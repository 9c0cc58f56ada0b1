#include "stream/transducer/stateful_search_batch.h"

#include <vector>

#include "stream/transducer/search_stream.h"

namespace voxrt::stream {

StatefulSearchRow stateful_search_row(FamilyStream& stream, const float* frames, int valid_frames) {
  StatefulSearchRow row{.frames = frames, .valid_frames = valid_frames};
  if (auto* greedy = dynamic_cast<SearchStream<decode::StatefulTransducerStreamSearch>*>(&stream)) {
    row.greedy = &greedy->search();
  } else {
    row.beam = &static_cast<SearchStream<decode::StatefulTransducerBeamSearch>&>(stream).search();
  }
  return row;
}

Status run_stateful_searches(decode::StatefulTransducerNetworks& networks,
                             std::span<const StatefulSearchRow> rows, int frames_per_stream) {
  std::vector<decode::StatefulTransducerStreamSearch*> greedy;
  std::vector<decode::StatefulTransducerBeamSearch*> beam;
  std::vector<float> greedy_frames, beam_frames;
  std::vector<int> greedy_valid, beam_valid;
  const std::size_t stream_values = static_cast<std::size_t>(frames_per_stream) *
                                    static_cast<std::size_t>(networks.encoder_dim());
  for (const StatefulSearchRow& row : rows) {
    if (row.greedy) {
      greedy.push_back(row.greedy);
      greedy_frames.insert(greedy_frames.end(), row.frames, row.frames + stream_values);
      greedy_valid.push_back(row.valid_frames);
    } else {
      beam.push_back(row.beam);
      beam_frames.insert(beam_frames.end(), row.frames, row.frames + stream_values);
      beam_valid.push_back(row.valid_frames);
    }
  }
  if (!greedy.empty()) {
    VOXRT_RETURN_IF_ERROR(decode::stateful_transducer_greedy(networks, greedy, greedy_frames.data(),
                                                             frames_per_stream, greedy_valid));
  }
  if (!beam.empty()) {
    VOXRT_RETURN_IF_ERROR(decode::stateful_transducer_beam(networks, beam, beam_frames.data(),
                                                           frames_per_stream, beam_valid));
  }
  return Status::ok();
}

}  // namespace voxrt::stream
