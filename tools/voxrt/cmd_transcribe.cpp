// voxrt transcribe: streams audio files (or stdin) through a Recognizer in 20 ms chunks, as a
// live microphone would send them, and prints partial and final results.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "audio/audio_io.h"
#include "commands.h"
#include "front_end_models.h"
#include "stream/recognizer.h"

namespace voxrt::cli {
namespace {

struct TranscribeArgs {
  std::vector<std::string> files;
  std::string engine;
  std::string vad = "energy";
  std::string decoder = "greedy";
  int beam_width = 8;
  float lm_weight = decode::BeamSearchConfig{}.lm_weight;
  float word_bonus = decode::BeamSearchConfig{}.word_insertion_bonus;
  std::string lm;
  std::string hotwords_file;
  float hotword_bonus = 1.5f;
  std::string vad_model;
  float vad_onset = 0.5f;
  float vad_offset = 0.35f;
  int vad_min_speech_ms = 250;
  int vad_min_silence_ms = 300;
  std::string wake_word;
  std::string wake_mel;
  std::string wake_embedding;
  float wake_threshold = 0.5f;
  bool wake_stay_awake = false;
  bool realtime = false;
  bool json = false;
  bool partials = true;
  int threads = 1;
  int chunk_ms = 20;
  int stdin_rate_hz = 16000;
  std::string stdin_format = "s16";
};

nlohmann::json result_json(const std::string& file, const stream::StreamResult& r) {
  nlohmann::json words = nlohmann::json::array();
  for (const auto& w : r.result.words) {
    words.push_back(
        {{"word", w.word}, {"start", w.start_s}, {"end", w.end_s}, {"conf", w.confidence}});
  }
  return {
      {"file", file}, {"text", r.result.text}, {"is_final", r.result.is_final}, {"words", words}};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1,
                    static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())))];
}

int run_transcribe(const TranscribeArgs& args) {
  stream::RecognizerConfig config;
  config.engine_path = args.engine;
  if (config.engine_path.empty()) {
    if (const char* env = std::getenv("VOXRT_ENGINE")) config.engine_path = env;
  }
  if (config.engine_path.empty()) {
    std::cerr << "error: no engine: give --engine (or set VOXRT_ENGINE); build one with\n"
                 "  voxrt build --onnx models/default/model.onnx --engine default.engine "
                 "--state conv1_state:conv1_state_out --state conv2_state:conv2_state_out --state "
                 "gru_state:gru_state_out\n";
    return 2;
  }
  if (!args.wake_word.empty()) {
    auto wake = wake_word_engines(args.wake_word, args.wake_mel, args.wake_embedding);
    if (!wake) {
      std::cerr << "error: " << wake.status().message() << "\n";
      return 2;
    }
    wake->threshold = args.wake_threshold;
    wake->rearm_after_utterance = !args.wake_stay_awake;
    config.wake_word = *wake;
  }
  if (args.vad == "off") {
    config.vad = stream::VadKind::kOff;
  } else if (args.vad == "energy") {
    config.vad = stream::VadKind::kEnergy;
  } else if (args.vad == "silero") {
    config.vad = stream::VadKind::kSilero;
    std::string model = args.vad_model;
    if (model.empty()) {
      if (const char* env = std::getenv("VOXRT_VAD_MODEL")) model = env;
    }
    if (model.empty()) {
      std::cerr << "error: --vad silero needs --vad-model silero_vad_v5.onnx (or an engine; "
                   "or set VOXRT_VAD_MODEL); scripts/fetch-third-party.sh fetches the model\n";
      return 2;
    }
    auto engine = silero_vad_engine(model);
    if (!engine) {
      std::cerr << "error: " << engine.status().message() << "\n";
      return 1;
    }
    config.silero_engine_path = *engine;
    config.silero_vad.onset_threshold = args.vad_onset;
    config.silero_vad.offset_threshold = args.vad_offset;
    config.silero_vad.min_speech_ms = args.vad_min_speech_ms;
    config.silero_vad.min_silence_ms = args.vad_min_silence_ms;
  } else {
    std::cerr << "error: --vad '" << args.vad << "': expected silero, energy or off\n";
    return 2;
  }
  config.decoder =
      args.decoder == "beam" ? stream::DecoderKind::kBeam : stream::DecoderKind::kGreedy;
  if (args.decoder != "beam" && args.decoder != "greedy") {
    std::cerr << "error: --decoder '" << args.decoder << "': expected greedy or beam\n";
    return 2;
  }
  if (!args.lm.empty() || !args.hotwords_file.empty()) config.decoder = stream::DecoderKind::kBeam;
  config.beam.beam_width = args.beam_width;
  config.beam.lm_weight = args.lm_weight;
  config.beam.word_insertion_bonus = args.word_bonus;
  config.lm_path = args.lm;
  config.threads = args.threads;
  config.max_streams = std::max<int>(1, static_cast<int>(args.files.size()));
  auto recognizer = stream::Recognizer::create(config);
  if (!recognizer) {
    std::cerr << "error: " << recognizer.status().message() << "\n";
    return 1;
  }
  stream::StreamOptions options;
  if (!args.hotwords_file.empty()) {
    std::ifstream in(args.hotwords_file);
    if (!in) {
      std::cerr << "error: cannot read --hotwords " << args.hotwords_file << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) options.hotwords.push_back(line);
    }
    options.hotword_bonus = args.hotword_bonus;
  }

  struct Source {
    std::string name;
    audio::AudioClip clip;
    std::unique_ptr<stream::Stream> stream;
    std::size_t next = 0;
  };
  std::vector<Source> sources;
  for (const auto& file : args.files) {
    Source s;
    s.name = file;
    auto clip = file == "-" ? audio::read_pcm_stream(stdin,
                                                     args.stdin_format == "f32"
                                                         ? audio::PcmEncoding::kF32LE
                                                         : audio::PcmEncoding::kS16LE,
                                                     args.stdin_rate_hz, 1, "stdin")
                            : audio::read_audio_file(file);
    if (!clip) {
      std::cerr << "error: " << clip.status().message() << "\n";
      return 1;
    }
    s.clip = std::move(*clip);
    stream::StreamOptions o = options;
    o.sample_rate_hz = s.clip.sample_rate_hz;
    auto st = (*recognizer)->open_stream(o);
    if (!st) {
      std::cerr << "error: " << file << ": " << st.status().message() << "\n";
      return 1;
    }
    s.stream = std::move(*st);
    sources.push_back(std::move(s));
  }

  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  auto print = [&](const Source& s, const stream::StreamResult& r) {
    if (args.json) {
      std::cout << result_json(s.name, r).dump() << "\n" << std::flush;
    } else if (r.result.is_final) {
      if (tty && args.partials) std::cout << "\r\033[K";
      std::cout << s.name << ": " << r.result.text << "\n" << std::flush;
    } else if (args.partials && tty) {
      std::cout << "\r\033[K" << s.name << ": " << r.result.text << "..." << std::flush;
    }
  };

  using clock = std::chrono::steady_clock;
  std::vector<double> chunk_latency_ms;
  double audio_s = 0;
  const auto start = clock::now();
  auto next_tick = start;
  std::vector<stream::Stream*> all;
  for (auto& s : sources) all.push_back(s.stream.get());
  for (bool active = true; active;) {
    active = false;
    const auto round_start = clock::now();
    for (auto& s : sources) {
      const std::size_t step = static_cast<std::size_t>(s.clip.sample_rate_hz) *
                               static_cast<std::size_t>(args.chunk_ms) / 1000;
      if (s.next < s.clip.samples.size()) {
        const std::size_t n = std::min(step, s.clip.samples.size() - s.next);
        Status st = s.stream->accept_pcm(std::span<const float>(s.clip.samples.data() + s.next, n));
        if (!st) {
          std::cerr << "error: " << s.name << ": " << st.message() << "\n";
          return 1;
        }
        s.next += n;
        if (s.next >= s.clip.samples.size()) (void)s.stream->input_finished();
        active = true;
      }
    }
    auto advanced = (*recognizer)->advance(all);
    if (!advanced) {
      std::cerr << "error: " << advanced.status().message() << "\n";
      return 1;
    }
    chunk_latency_ms.push_back(
        std::chrono::duration<double, std::milli>(clock::now() - round_start).count());
    for (auto& s : sources) {
      for (const auto& r : s.stream->take_results()) print(s, r);
    }
    if (args.realtime) {
      next_tick += std::chrono::milliseconds(args.chunk_ms);
      std::this_thread::sleep_until(next_tick);
    }
  }
  for (auto& s : sources)
    audio_s += static_cast<double>(s.clip.samples.size()) / s.clip.sample_rate_hz;
  const double wall_s = std::chrono::duration<double>(clock::now() - start).count();
  long long run = 0, skipped = 0;
  for (auto& s : sources) {
    run += s.stream->chunks_run();
    skipped += s.stream->chunks_skipped();
    if (config.wake_word) {
      std::cerr << std::fixed << std::setprecision(3) << "[voxrt] " << s.name << ": wake word ";
      if (s.stream->wake_word_detections() > 0) {
        std::cerr << "fired " << s.stream->wake_word_detections() << " time(s), last at "
                  << s.stream->wake_word_sample() / 16000.0 << " s";
      } else {
        std::cerr << "did not fire (highest score " << s.stream->wake_word_max_score() << ")";
      }
      std::cerr << "\n";
    }
  }
  std::cerr << std::fixed << std::setprecision(3) << "[voxrt] " << sources.size() << " stream(s), "
            << audio_s << " s of audio in " << wall_s << " s: RTF "
            << wall_s / std::max(audio_s, 1e-9) << "; per-" << args.chunk_ms
            << "ms-chunk latency p50 " << percentile(chunk_latency_ms, 50) << " p95 "
            << percentile(chunk_latency_ms, 95) << " p99 " << percentile(chunk_latency_ms, 99)
            << " max " << percentile(chunk_latency_ms, 100) << " ms; model chunks run " << run
            << ", skipped (VAD or wake word) " << skipped << "; VAD engine calls "
            << (*recognizer)->vad_engine_calls() << ", wake-word engine calls "
            << (*recognizer)->wake_word_engine_calls() << "\n";
  return 0;
}

}  // namespace

void add_transcribe_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TranscribeArgs>();
  CLI::App* cmd =
      app.add_subcommand("transcribe", "Recognize speech in audio files, streamed in 20 ms chunks");
  cmd->footer(
      "Each file is a stream; several files are decoded concurrently, batched through the engine.\n"
      "'-' reads raw PCM from stdin (--stdin-rate, --stdin-format). With --json every result is "
      "one\n"
      "line: {\"file\", \"text\", \"is_final\", \"words\": [{\"word\", \"start\", \"end\", "
      "\"conf\"}]} (seconds).\n"
      "The real-time factor and per-chunk latency percentiles go to stderr.\n"
      "Example:\n  voxrt transcribe samples/*.wav --engine default.engine --json");
  cmd->add_option("files", args->files, "WAV/FLAC/... files, or - for stdin")->required();
  cmd->add_option("--engine", args->engine,
                  "Engine of a ctc_streaming model (default: $VOXRT_ENGINE)");
  cmd->add_option("--vad", args->vad, "silero | energy | off")->capture_default_str();
  cmd->add_option("--vad-model", args->vad_model,
                  "Silero VAD v5: .onnx (built once into ~/.cache/voxrt) or an engine "
                  "(default: $VOXRT_VAD_MODEL)");
  cmd->add_option("--vad-onset", args->vad_onset, "Silero: speech starts at probability >= this")
      ->capture_default_str();
  cmd->add_option("--vad-offset", args->vad_offset, "Silero: speech ends below this")
      ->capture_default_str();
  cmd->add_option("--vad-min-speech-ms", args->vad_min_speech_ms, "Silero: shortest speech")
      ->capture_default_str();
  cmd->add_option("--vad-min-silence-ms", args->vad_min_silence_ms,
                  "Silero: silence that ends speech")
      ->capture_default_str();
  cmd->add_option("--decoder", args->decoder, "greedy | beam")->capture_default_str();
  cmd->add_option("--beam", args->beam_width, "Beam width")->capture_default_str();
  cmd->add_option("--lm-weight", args->lm_weight,
                  "Weight of the LM's log probability in beam search")
      ->capture_default_str();
  cmd->add_option("--word-bonus", args->word_bonus,
                  "Log-score bonus per word the LM scores (offsets the LM's pull towards "
                  "deleting words)")
      ->capture_default_str();
  cmd->add_option("--lm", args->lm, "Word n-gram LM (ARPA) for beam search")
      ->check(CLI::ExistingFile);
  cmd->add_option("--hotwords", args->hotwords_file, "File of phrases to boost, one per line")
      ->check(CLI::ExistingFile);
  cmd->add_option("--hotword-bonus", args->hotword_bonus, "Log-score bonus per matched unit")
      ->capture_default_str();
  cmd->add_option("--wake-word", args->wake_word,
                  "Wake-word head (.onnx/.engine, e.g. hey_jarvis_v0.1.onnx) or its folder; "
                  "recognition starts once it fires");
  cmd->add_option("--wake-mel", args->wake_mel,
                  "openWakeWord melspectrogram model (default: beside the head)");
  cmd->add_option("--wake-embedding", args->wake_embedding,
                  "openWakeWord embedding model (default: beside the head)");
  cmd->add_option("--wake-threshold", args->wake_threshold, "Wake-word score that fires")
      ->capture_default_str();
  cmd->add_flag("--wake-stay-awake", args->wake_stay_awake,
                "After the wake word, recognise to the end (default: one utterance, then wait "
                "for the wake word again)");
  cmd->add_flag("--realtime", args->realtime, "Pace the audio like a live microphone");
  cmd->add_flag("--json", args->json, "One JSON object per result line");
  cmd->add_option("--threads", args->threads, "Kernel threads")->capture_default_str();
  cmd->add_option("--chunk-ms", args->chunk_ms, "Milliseconds of audio per chunk sent")
      ->capture_default_str();
  cmd->add_option("--stdin-rate", args->stdin_rate_hz, "Sample rate of raw stdin audio")
      ->capture_default_str();
  cmd->add_option("--stdin-format", args->stdin_format, "s16 | f32 raw stdin samples")
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = run_transcribe(*args); });
}

}  // namespace voxrt::cli
