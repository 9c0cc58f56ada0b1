// The cost of the stateful transducer searches themselves (decode/stateful_transducer_search.h
// greedy, decode/stateful_tdt_beam.h TDT beam) at Parakeet-TDT's sizes, without a model: the
// networks are synthetic (a joiner whose logits come from a hash of the frame and the row's
// decoder output, a decoder that copies), and their own time is measured and taken out, so the
// figure is the search's bookkeeping: log-softmax, selection, merging, copies of hypotheses and
// of the LSTM states. The synthetic joiner favours the blank on most rows (as a trained model
// does) and durations 1..4 over 0, so units come on a fraction of the steps; its numbers are
// not a trained model's, so the figure is the order of the search's cost, not a prediction.
//   tdt_search_bench [--vocab 1025] [--frames 500] [--streams 1,16] [--beams 0,1,4,8]
//                    [--decoder-dim 640] [--state 2560] [--repeats 3]
// (beam 0: the greedy search). Prints, per (search, streams), the search's CPU time per stream and
// encoder frame (median of the repeats), the joiner rows per stream and frame, and the networks'
// share of the wall time.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "decode/stateful_tdt_beam.h"
#include "decode/stateful_transducer_search.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class SyntheticNetworks : public voxrt::decode::StatefulTransducerNetworks {
 public:
  SyntheticNetworks(int vocab, int decoder_dim, int state)
      : vocab_(vocab), decoder_dim_(decoder_dim), state_(state) {}
  int vocab_size() const override { return vocab_; }
  int blank_id() const override { return vocab_ - 1; }
  const std::vector<int>& durations() const override { return durations_; }
  int state_size() const override { return state_; }
  int decoder_dim() const override { return decoder_dim_; }
  int encoder_dim() const override { return 1; }
  voxrt::Status run_decoder(std::span<const std::int64_t> units, std::span<const float> states,
                            int rows, std::vector<float>& out, std::vector<float>& next) override {
    const auto start = Clock::now();
    out.assign(static_cast<std::size_t>(rows) * decoder_dim_, 0.0f);
    next.assign(states.begin(), states.end());
    for (int r = 0; r < rows; ++r) {
      // The decoder output's first value identifies the unit history (for the joiner's hash).
      const float history = states[static_cast<std::size_t>(r) * state_];
      const auto h = static_cast<float>(
          mix(static_cast<std::uint64_t>(history) * 131 + static_cast<std::uint64_t>(units[r])) %
          1000003);
      out[static_cast<std::size_t>(r) * decoder_dim_] = h;
      next[static_cast<std::size_t>(r) * state_] = h;
    }
    network_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    return voxrt::Status::ok();
  }
  voxrt::Status run_joiner(std::span<const float> encoder, std::span<const float> decoder, int rows,
                           std::vector<float>& logits) override {
    const auto start = Clock::now();
    const int width = vocab_ + static_cast<int>(durations_.size());
    logits.resize(static_cast<std::size_t>(rows) * width);
    for (int r = 0; r < rows; ++r) {
      std::uint64_t seed = mix(static_cast<std::uint64_t>(encoder[r]) * 7919 +
                               static_cast<std::uint64_t>(decoder[r * decoder_dim_]));
      float* row = logits.data() + static_cast<std::size_t>(r) * width;
      for (int k = 0; k < width; ++k) {
        seed = mix(seed);
        row[k] = static_cast<float>(seed % 1000) / 250.0f;  // 0..4
      }
      // The blank ahead on four rows in five, durations 1..4 ahead of 0.
      seed = mix(seed);
      if (seed % 5 != 0) row[vocab_ - 1] += 8.0f;
      for (int d = 1; d <= 4; ++d) row[vocab_ + d] += 2.0f;
    }
    joiner_rows += rows;
    network_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    return voxrt::Status::ok();
  }
  double network_seconds = 0.0;
  long long joiner_rows = 0;

 private:
  int vocab_, decoder_dim_, state_;
  std::vector<int> durations_{0, 1, 2, 3, 4};
};

}  // namespace

int main(int argc, char** argv) {
  int vocab = 1025, frames = 500, decoder_dim = 640, state = 2560, repeats = 3;
  std::vector<int> streams_list{1, 16}, beams{0, 1, 4, 8};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--vocab")
      vocab = std::stoi(value);
    else if (flag == "--frames")
      frames = std::stoi(value);
    else if (flag == "--streams")
      streams_list = parse_list(value);
    else if (flag == "--beams")
      beams = parse_list(value);
    else if (flag == "--decoder-dim")
      decoder_dim = std::stoi(value);
    else if (flag == "--state")
      state = std::stoi(value);
    else if (flag == "--repeats")
      repeats = std::stoi(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::vector<std::string> pieces;
  for (int k = 0; k + 1 < vocab; ++k) pieces.push_back("u" + std::to_string(k));
  pieces.push_back("<blk>");
  auto vocabulary = std::make_shared<const voxrt::decode::Vocabulary>(
      voxrt::decode::Vocabulary::pieces(pieces, vocab - 1).value());
  std::printf("vocab %d (+5 durations), %d frames, decoder_dim %d, state %d floats\n", vocab,
              frames, decoder_dim, state);
  std::printf("%-8s %7s %16s %12s %14s %8s\n", "search", "streams", "search us/frame", "rows/frame",
              "network share", "units");
  for (int streams : streams_list) {
    std::vector<float> encoder;
    for (int b = 0; b < streams; ++b)
      for (int t = 0; t < frames; ++t) encoder.push_back(static_cast<float>(b * 100000 + t));
    const std::vector<int> valid(static_cast<std::size_t>(streams), frames);
    for (int beam : beams) {
      std::vector<double> per_frame_us;
      double rows_per_frame = 0.0, share = 0.0;
      std::size_t units = 0;
      for (int rep = 0; rep < repeats; ++rep) {
        SyntheticNetworks nets(vocab, decoder_dim, state);
        const auto start = Clock::now();
        voxrt::Status status = voxrt::Status::ok();
        if (beam == 0) {
          std::vector<voxrt::decode::StatefulTransducerStreamSearch> searches;
          for (int b = 0; b < streams; ++b)
            searches.emplace_back(vocabulary, voxrt::decode::TimeBase{}, 10, state);
          std::vector<voxrt::decode::StatefulTransducerStreamSearch*> ptrs;
          for (auto& s : searches) ptrs.push_back(&s);
          status =
              voxrt::decode::stateful_transducer_greedy(nets, ptrs, encoder.data(), frames, valid);
          units = searches[0].finalize().tokens.size();
        } else {
          std::vector<voxrt::decode::StatefulTransducerBeamSearch> searches;
          for (int b = 0; b < streams; ++b)
            searches.emplace_back(vocabulary, voxrt::decode::TimeBase{}, beam, 10, state);
          std::vector<voxrt::decode::StatefulTransducerBeamSearch*> ptrs;
          for (auto& s : searches) ptrs.push_back(&s);
          status =
              voxrt::decode::stateful_transducer_beam(nets, ptrs, encoder.data(), frames, valid);
          units = searches[0].finalize().tokens.size();
        }
        const double wall = std::chrono::duration<double>(Clock::now() - start).count();
        if (!status.is_ok()) {
          std::fprintf(stderr, "%s\n", status.to_string().c_str());
          return 1;
        }
        per_frame_us.push_back((wall - nets.network_seconds) * 1e6 / (streams * frames));
        rows_per_frame = static_cast<double>(nets.joiner_rows) / (streams * frames);
        share = nets.network_seconds / wall;
      }
      std::sort(per_frame_us.begin(), per_frame_us.end());
      const std::string name = beam == 0 ? "greedy" : "beam " + std::to_string(beam);
      std::printf("%-8s %7d %16.2f %12.2f %13.0f%% %8zu\n", name.c_str(), streams,
                  per_frame_us[per_frame_us.size() / 2], rows_per_frame, share * 100.0, units);
    }
  }
  return 0;
}
