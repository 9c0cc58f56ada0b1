// One stream of a transducer family (transducer, transducer_stateful, transducer_offline): its
// hold on the model (a state slot or a place in the count of open streams, model_lease.h) and its
// search, which the FamilyStream methods hand on to. `Search` is any of the transducer searches
// (decode/transducer_search.h, stateful_transducer_search.h, stateful_transducer_beam.h): they
// share these methods, so the three families share this one wrapper.
#pragma once

#include <utility>

#include "stream/model_family.h"
#include "stream/transducer/model_lease.h"

namespace voxrt::stream {

template <class Search>
class SearchStream : public FamilyStream {
 public:
  SearchStream(ModelLease lease, Search search)
      : lease_(std::move(lease)), search_(std::move(search)) {}

  Status accept_skipped_frames(int output_frames) override {
    search_.accept_skipped_frames(output_frames);
    return Status::ok();
  }
  DecoderProgress progress() const override {
    return {search_.utterance_frames(), search_.trailing_blank_frames(), search_.has_tokens()};
  }
  decode::DecodingResult partial() const override { return search_.partial(); }
  decode::DecodingResult finalize() override { return search_.finalize(); }
  void reset_utterance() override { search_.reset_utterance(); }
  // A fresh prediction-network state and fresh encoder states: the next utterance is decoded as
  // if it had been cut out of the stream.
  Status reset_state() override {
    search_.reset_state();
    return lease_.reset_states();
  }

  int slot() const { return lease_.slot(); }
  Search& search() { return search_; }

 private:
  // Declared first so that it ends last: the search goes before the slot is given back.
  ModelLease lease_;
  Search search_;
};

}  // namespace voxrt::stream
