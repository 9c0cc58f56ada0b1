// The transducer family's cost per chunk (docs/perf/transducer.md): for N streams advanced
// together, the encoder call and the search (greedy or modified beam: one joiner call per
// encoder frame, one decoder call per step for the hypotheses that emitted), per chunk, and the
// real-time factor of one core. Streams get random features (the search's work depends on how
// many units the model emits; the bundle's random weights emit on most frames, more than a
// trained model, so the search figure is an upper end).
//   transducer_bench BUNDLE [--streams 1,256] [--chunks 20] [--search greedy|beam] [--beam 4]
//                    [--threads 1]
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stream/bundle_manifest.h"
#include "stream/recognizer.h"
#include "stream/transducer/transducer_model.h"

namespace {

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace voxrt;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: transducer_bench BUNDLE [--streams 1,256] [--chunks 20] "
                 "[--search greedy|beam] [--beam 4] [--threads 1]\n");
    return 2;
  }
  const std::string bundle = argv[1];
  std::vector<int> stream_counts = {1, 256};
  int chunks = 20, beam = 4, threads = 1;
  std::string search = "greedy";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--streams")
      stream_counts = parse_list(value);
    else if (flag == "--chunks")
      chunks = std::stoi(value);
    else if (flag == "--search")
      search = value;
    else if (flag == "--beam")
      beam = std::stoi(value);
    else if (flag == "--threads")
      threads = std::stoi(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto manifest = stream::BundleManifest::read(bundle);
  if (!manifest) {
    std::fprintf(stderr, "error: %s\n", manifest.status().message().c_str());
    return 1;
  }
  std::printf("bundle %s, %s search%s, %d thread(s), %d chunks per run\n", bundle.c_str(),
              search.c_str(), search == "beam" ? (" beam " + std::to_string(beam)).c_str() : "",
              threads, chunks);
  std::printf("%8s %12s %12s %12s %10s %12s %12s\n", "streams", "encoder_ms", "search_ms",
              "total_ms", "search/enc", "chunk_audio", "core_RTF");
  for (int n : stream_counts) {
    stream::RecognizerConfig config;
    config.engine_path = bundle;
    config.max_streams = n;
    config.max_batch = n;
    config.threads = threads;
    config.decoder = search == "beam" ? stream::DecoderKind::kBeam : stream::DecoderKind::kGreedy;
    config.transducer.beam_width = beam;
    auto model = stream::TransducerModel::create(*manifest, stream::bundle_folder(bundle), config);
    if (!model) {
      std::fprintf(stderr, "error: %s\n", model.status().message().c_str());
      return 1;
    }
    const auto& layout = (*model)->chunk_layout();
    const int dim = (*model)->feature_config().output_dim();
    // What the Recognizer resolves for a stream without choices of its own.
    stream::ResolvedDecoding decoding;
    decoding.decoder = config.decoder;
    decoding.transducer = config.transducer;
    std::vector<std::unique_ptr<stream::FamilyStream>> streams;
    for (int s = 0; s < n; ++s) {
      auto opened = (*model)->open_stream(stream::StreamOptions{}, decoding);
      if (!opened) {
        std::fprintf(stderr, "error: %s\n", opened.status().message().c_str());
        return 1;
      }
      streams.push_back(std::move(*opened));
    }
    std::mt19937 rng(1);
    std::normal_distribution<float> level(8.0f, 3.0f);
    std::vector<std::vector<float>> features(static_cast<std::size_t>(n));
    std::vector<stream::ChunkInput> batch;
    for (int s = 0; s < n; ++s) {
      auto& f = features[static_cast<std::size_t>(s)];
      f.resize(static_cast<std::size_t>(layout.chunk_frames) * dim);
      for (float& v : f) v = level(rng);
      batch.push_back({streams[static_cast<std::size_t>(s)].get(), f.data(),
                       layout.shift_frames / layout.subsampling});
    }
    // One warm-up chunk, then the timed ones.
    if (auto st = (*model)->run_batch(batch, layout.chunk_frames); !st) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    }
    const auto before = (*model)->timings();
    for (int c = 0; c < chunks; ++c) {
      if (auto st = (*model)->run_batch(batch, layout.chunk_frames); !st) {
        std::fprintf(stderr, "error: %s\n", st.message().c_str());
        return 1;
      }
    }
    const auto& after = (*model)->timings();
    const double enc_ms = (after.encoder_seconds - before.encoder_seconds) * 1e3 / chunks;
    const double search_ms = (after.search_seconds - before.search_seconds) * 1e3 / chunks;
    const double chunk_audio_ms = layout.shift_frames * (*model)->feature_config().frame_shift_ms;
    std::printf("%8d %12.3f %12.3f %12.3f %10.2f %10.0fms %12.4f\n", n, enc_ms, search_ms,
                enc_ms + search_ms, search_ms / enc_ms, chunk_audio_ms,
                (enc_ms + search_ms) / (chunk_audio_ms * n));
  }
  return 0;
}
