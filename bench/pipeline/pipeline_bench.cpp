// pipeline_bench: what one stream costs per 20 ms chunk on one core, so the server's capacity
// can be predicted: features (+ energy VAD), greedy decoding and prefix beam search (vocab 29,
// beam 8 / 16, with and without a word LM), and the front-end models run by voxrt's engine
// (Silero VAD v5, alone and batched; the openWakeWord chain), built from the ONNX files that
// scripts/fetch-third-party.sh fetches. A program, not a test.
//
// Usage: pipeline_bench [WAV] [--seconds S] [--models DIR]
//   (default: a pocketsphinx clip, 3 s of timing each, DIR = .third_party/models)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "audio/audio_io.h"
#include "audio/energy_vad.h"
#include "audio/feature_extractor.h"
#include "audio/resampler.h"
#include "audio/silero_vad.h"
#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "stream/silero_vad_model.h"
#include "stream/wake_word.h"
#include "voxrt/builder.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace voxrt;

constexpr int kChunkSamples = 320;  // 20 ms at 16 kHz
constexpr int kFramesPerChunk = 2;  // 10 ms feature frames; decoders see subsampling-1 output

struct Timing {
  double median_us = 0;
  double p90_us = 0;
  double mean_us = 0;
};

Timing summarise(std::vector<double> samples_us) {
  std::sort(samples_us.begin(), samples_us.end());
  Timing timing;
  timing.median_us = samples_us[samples_us.size() / 2];
  timing.p90_us = samples_us[samples_us.size() * 9 / 10];
  double sum = 0;
  for (double s : samples_us) sum += s;
  timing.mean_us = sum / samples_us.size();
  return timing;
}

void report(const char* name, const Timing& t) {
  // Streams one core can carry in real time at the mean cost per 20 ms chunk.
  std::printf("| %-38s | %9.2f | %9.2f | %9.2f | %8.0f |\n", name, t.median_us, t.p90_us, t.mean_us,
              20000.0 / t.mean_us);
}

// Runs `chunk(i)` for successive chunks until `seconds` of wall time; returns per-chunk times.
template <typename Reset, typename Chunk>
std::vector<double> time_chunks(double seconds, int chunks_per_pass, Reset reset, Chunk chunk) {
  std::vector<double> samples;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    reset();
    for (int i = 0; i < chunks_per_pass; ++i) {
      const auto start = Clock::now();
      chunk(i);
      samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  return samples;
}

// Posteriors that look like an acoustic model's: mostly confident blanks, runs of a unit,
// and some frames split between two or three units.
std::vector<float> synthetic_log_probs(int frames, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::uniform_int_distribution<int> unit(1, vocab - 1);
  std::vector<float> values(static_cast<std::size_t>(frames) * vocab);
  int current = unit(rng);
  for (int t = 0; t < frames; ++t) {
    std::vector<double> p(static_cast<std::size_t>(vocab), 0.002);
    const double r = uniform(rng);
    if (r < 0.55) {
      p[0] = 0.9;
    } else if (r < 0.85) {
      if (uniform(rng) < 0.5) current = unit(rng);
      p[static_cast<std::size_t>(current)] = 0.7;
      p[0] = 0.2;
    } else {
      p[static_cast<std::size_t>(unit(rng))] = 0.4;
      p[static_cast<std::size_t>(unit(rng))] = 0.3;
      p[0] = 0.2;
    }
    double sum = 0;
    for (double x : p) sum += x;
    for (int v = 0; v < vocab; ++v)
      values[static_cast<std::size_t>(t) * vocab + v] = static_cast<float>(std::log(p[v] / sum));
  }
  return values;
}

std::string make_arpa(const decode::Vocabulary& vocabulary, int words, unsigned seed) {
  // A random 3-gram LM over `words` short words of the vocabulary's letters.
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> letter(3, vocabulary.size() - 1);
  std::uniform_int_distribution<int> length(1, 6);
  std::vector<std::string> lexicon;
  while (static_cast<int>(lexicon.size()) < words) {
    std::string w;
    for (int i = length(rng); i > 0; --i) w += vocabulary.token(letter(rng));
    if (std::find(lexicon.begin(), lexicon.end(), w) == lexicon.end()) lexicon.push_back(w);
  }
  std::uniform_int_distribution<int> pick(0, words - 1);
  std::vector<std::string> bigrams, trigrams;
  for (int i = 0; i < words * 4; ++i)
    bigrams.push_back(lexicon[pick(rng)] + " " + lexicon[pick(rng)]);
  std::sort(bigrams.begin(), bigrams.end());
  bigrams.erase(std::unique(bigrams.begin(), bigrams.end()), bigrams.end());
  for (int i = 0; i < words * 4; ++i)
    trigrams.push_back(bigrams[static_cast<std::size_t>(pick(rng)) % bigrams.size()] + " " +
                       lexicon[pick(rng)]);
  std::sort(trigrams.begin(), trigrams.end());
  trigrams.erase(std::unique(trigrams.begin(), trigrams.end()), trigrams.end());
  std::string text = "\\data\\\nngram 1=" + std::to_string(words + 3) +
                     "\nngram 2=" + std::to_string(bigrams.size()) +
                     "\nngram 3=" + std::to_string(trigrams.size()) + "\n\n\\1-grams:\n";
  text += "-99 <s> -0.5\n-1.5 </s>\n-3 <unk>\n";
  for (const std::string& w : lexicon) text += "-2.5 " + w + " -0.4\n";
  text += "\n\\2-grams:\n";
  for (const std::string& b : bigrams) text += "-1.2 " + b + " -0.2\n";
  text += "\n\\3-grams:\n";
  for (const std::string& t : trigrams) text += "-0.7 " + t + "\n";
  text += "\n\\end\\\n";
  return text;
}

// Builds an engine (autotuned, as `voxrt transcribe` does) into a temporary file; "" if absent.
std::string build_engine(const std::filesystem::path& onnx, const BuilderConfig& config,
                         const std::string& name) {
  if (!std::filesystem::exists(onnx)) {
    std::fprintf(stderr, "pipeline_bench: %s missing (scripts/fetch-third-party.sh): row skipped\n",
                 onnx.string().c_str());
    return "";
  }
  auto bytes = build_engine_from_onnx_file(onnx.string(), config);
  if (!bytes) {
    std::fprintf(stderr, "pipeline_bench: %s: %s\n", onnx.string().c_str(),
                 bytes.status().to_string().c_str());
    return "";
  }
  const auto path = std::filesystem::temp_directory_path() / ("pipeline_bench_" + name);
  std::FILE* f = std::fopen(path.string().c_str(), "wb");
  if (f == nullptr) return "";
  std::fwrite(bytes->data(), 1, bytes->size(), f);
  std::fclose(f);
  return path.string();
}

// Silero VAD v5 on `streams` streams batched into one engine call per window; the timings are
// per stream and per 20 ms chunk (a window completes every 1.6 chunks).
void bench_silero(const std::string& engine, const std::vector<float>& samples, int chunks,
                  int streams, double seconds, const std::string& profile) {
  auto model = stream::SileroVadModel::load(engine);
  if (!model) {
    std::fprintf(stderr, "pipeline_bench: %s\n", model.status().to_string().c_str());
    return;
  }
  audio::SileroVadConfig config;
  std::vector<audio::SileroFramer> framers;
  std::vector<std::vector<float>> states(static_cast<std::size_t>(streams));
  std::vector<float> windows(static_cast<std::size_t>(streams * config.model_input_samples()));
  std::vector<const float*> window_ptrs;
  std::vector<float*> state_ptrs;
  std::vector<float> probabilities(static_cast<std::size_t>(streams));
  auto timings = time_chunks(
      seconds, chunks,
      [&] {
        framers.assign(static_cast<std::size_t>(streams), audio::SileroFramer(config));
        for (auto& s : states) s.assign(stream::SileroVadModel::kStateValues, 0.0f);
      },
      [&](int i) {
        const std::span<const float> chunk(
            samples.data() + static_cast<std::size_t>(i) * kChunkSamples, kChunkSamples);
        for (auto& f : framers) f.accept_waveform(chunk);
        while (framers[0].has_window()) {
          window_ptrs.clear();
          state_ptrs.clear();
          for (int b = 0; b < streams; ++b) {
            float* w = windows.data() + static_cast<std::size_t>(b * config.model_input_samples());
            framers[static_cast<std::size_t>(b)].pop_window(w);
            window_ptrs.push_back(w);
            state_ptrs.push_back(states[static_cast<std::size_t>(b)].data());
          }
          (void)(*model)->run(window_ptrs, state_ptrs, probabilities);
        }
      });
  for (double& t : timings) t /= streams;
  const std::string name = "Silero VAD v5 (" + profile + "), " + std::to_string(streams) +
                           (streams > 1 ? " streams batched" : " stream");
  report(name.c_str(), summarise(timings));
}

// The openWakeWord chain on one stream: an 80 ms chunk (mel + embedding + head) every 4 chunks.
void bench_wake_word(const stream::WakeWordConfig& config, const std::vector<float>& samples,
                     int chunks, double seconds) {
  auto models = stream::WakeWordModels::load(config);
  if (!models) {
    std::fprintf(stderr, "pipeline_bench: %s\n", models.status().to_string().c_str());
    return;
  }
  std::optional<stream::WakeWordDetector> detector;
  auto timings = time_chunks(
      seconds, chunks, [&] { detector.emplace(*models); },
      [&](int i) {
        detector->accept_waveform(std::span<const float>(
            samples.data() + static_cast<std::size_t>(i) * kChunkSamples, kChunkSamples));
        while (detector->has_chunk()) (void)detector->process_chunk();
      });
  report("wake word (mel + embedding + head)", summarise(timings));
}

}  // namespace

int main(int argc, char** argv) {
  std::string wav =
      "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav";
  double seconds = 3.0;
  std::filesystem::path models_dir = ".third_party/models";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
      models_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: pipeline_bench [WAV] [--seconds S] [--models DIR]\n");
      return 0;
    } else {
      wav = argv[i];
    }
  }
  auto clip = audio::read_audio_file(wav);
  if (!clip) {
    std::fprintf(stderr, "pipeline_bench: %s\n", clip.status().to_string().c_str());
    return 1;
  }
  std::vector<float> samples = clip->samples;
  if (clip->sample_rate_hz != 16000) {
    auto resampled = audio::resample(samples, clip->sample_rate_hz, 16000);
    if (!resampled) return 1;
    samples = *resampled;
  }
  const int chunks = static_cast<int>(samples.size()) / kChunkSamples;
  std::printf("audio: %s (%.2f s, %d chunks of 20 ms); %.1f s of timing per row\n\n", wav.c_str(),
              samples.size() / 16000.0, chunks, seconds);
  std::printf("| %-38s | %9s | %9s | %9s | %8s |\n", "stage (one stream, per 20 ms chunk)",
              "median us", "p90 us", "mean us", "streams/core");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(40, '-').c_str(), std::string(11, '-').c_str(),
              std::string(11, '-').c_str(), std::string(11, '-').c_str(),
              std::string(10, '-').c_str());

  // Front end.
  auto run_frontend = [&](const char* name, const audio::FeatureConfig& config, bool with_vad) {
    auto extractor = audio::StreamingFeatureExtractor::create(config);
    auto vad = audio::EnergyVad::create(audio::EnergyVadConfig{});
    std::vector<float> features;
    std::vector<audio::VadEvent> events;
    auto timings = time_chunks(
        seconds, chunks,
        [&] {
          extractor->reset();
          vad->reset();
        },
        [&](int i) {
          const std::span<const float> chunk(
              samples.data() + static_cast<std::size_t>(i) * kChunkSamples, kChunkSamples);
          if (with_vad) vad->accept_waveform(chunk, events);
          extractor->accept_waveform(chunk);
          features.clear();
          extractor->pop_frames(features, extractor->frames_ready());
          events.clear();
        });
    report(name, summarise(timings));
  };
  run_frontend("fbank 80 (povey, 25/10 ms)", audio::FeatureConfig{}, false);
  run_frontend("fbank 80 + energy VAD", audio::FeatureConfig{}, true);
  run_frontend("DS2 spectrogram 161 + energy VAD", audio::FeatureConfig::linear_spectrogram(),
               true);
  {
    auto vad = audio::EnergyVad::create(audio::EnergyVadConfig{});
    std::vector<audio::VadEvent> events;
    report(
        "energy VAD alone",
        summarise(time_chunks(
            seconds, chunks, [&] { vad->reset(); },
            [&](int i) {
              vad->accept_waveform(
                  std::span<const float>(
                      samples.data() + static_cast<std::size_t>(i) * kChunkSamples, kChunkSamples),
                  events);
              events.clear();
            })));
  }
  {
    auto resampler = audio::StreamingResampler::create(48000, 16000);
    std::vector<float> input(960, 0.1f);
    std::vector<float> output;
    report("soxr 48 kHz -> 16 kHz (HQ)", summarise(time_chunks(
                                             seconds, chunks, [] {},
                                             [&](int) {
                                               output.clear();
                                               (void)resampler->process(input, output);
                                             })));
  }

  // Front-end models run by the engine (CPU backend, one kernel thread).
  {
    BuilderConfig silero;
    silero.fixed_inputs["sr"] = Tensor::scalar_i64(16000);
    silero.profiles = {
        OptimizationProfile{"p",
                            {{"input", ShapeRange{{1, 576}, {8, 576}, {32, 576}}},
                             {"state", ShapeRange{{2, 1, 128}, {2, 8, 128}, {2, 32, 128}}}}}};
    // The profile `voxrt transcribe --vad silero` builds (batch 1..32, tuned at 8), and one
    // tuned at batch 1.
    const std::string engine = build_engine(models_dir / "silero_vad_v5.onnx", silero, "silero");
    if (!engine.empty()) {
      for (int streams : {1, 8, 32})
        bench_silero(engine, samples, chunks, streams, seconds, "opt 8");
    }
    silero.profiles = {
        OptimizationProfile{"p",
                            {{"input", ShapeRange{{1, 576}, {1, 576}, {32, 576}}},
                             {"state", ShapeRange{{2, 1, 128}, {2, 1, 128}, {2, 32, 128}}}}}};
    const std::string engine1 = build_engine(models_dir / "silero_vad_v5.onnx", silero, "silero1");
    if (!engine1.empty()) bench_silero(engine1, samples, chunks, 1, seconds, "opt 1");
    BuilderConfig mel;
    mel.profiles = {
        OptimizationProfile{"p", {{"input", ShapeRange{{1, 1760}, {1, 1760}, {1, 1760}}}}}};
    stream::WakeWordConfig wake;
    wake.melspectrogram_engine = build_engine(models_dir / "melspectrogram.onnx", mel, "mel");
    wake.embedding_engine = build_engine(models_dir / "embedding_model.onnx", {}, "embedding");
    wake.head_engine = build_engine(models_dir / "hey_jarvis_v0.1.onnx", {}, "hey_jarvis");
    if (!wake.melspectrogram_engine.empty() && !wake.embedding_engine.empty() &&
        !wake.head_engine.empty())
      bench_wake_word(wake, samples, chunks, seconds);
  }

  // Decoders: vocab 29, two output frames per 20 ms chunk (subsampling 1 at 10 ms), 10 s streams.
  std::vector<std::string> tokens = {"_", " ", "'"};
  for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c);
  auto vocabulary = std::make_shared<const decode::Vocabulary>(
      std::move(decode::Vocabulary::characters(tokens, 0, " ")).value());
  const int decode_chunks = 500;
  const std::vector<float> log_probs = synthetic_log_probs(decode_chunks * kFramesPerChunk, 29, 42);
  auto chunk_view = [&](int i) {
    return decode::LogProbView{
        log_probs.data() + static_cast<std::size_t>(i) * kFramesPerChunk * 29, kFramesPerChunk, 29};
  };
  {
    decode::GreedyCtcDecoder greedy(vocabulary, decode::TimeBase{});
    report("CTC greedy", summarise(time_chunks(
                             seconds, decode_chunks, [&] { greedy.reset_utterance(); },
                             [&](int i) { (void)greedy.accept(chunk_view(i)); })));
  }
  auto lm = std::make_shared<const decode::ArpaLm>(
      std::move(decode::ArpaLm::parse(make_arpa(*vocabulary, 2000, 7), "bench.arpa")).value());
  for (int beam : {8, 16}) {
    for (bool with_lm : {false, true}) {
      decode::BeamSearchConfig config;
      config.beam_width = beam;
      config.max_units_per_frame = beam;
      config.unit_prune_log_prob = std::log(1e-3f);
      auto decoder = decode::CtcPrefixBeamDecoder::create(vocabulary, config, decode::TimeBase{},
                                                          with_lm ? lm : nullptr);
      const std::string name =
          "CTC prefix beam " + std::to_string(beam) + (with_lm ? " + 3-gram LM (2k words)" : "");
      report(name.c_str(), summarise(time_chunks(
                               seconds, decode_chunks, [&] { decoder->reset_utterance(); },
                               [&](int i) { (void)decoder->accept(chunk_view(i)); })));
    }
  }
  return 0;
}
