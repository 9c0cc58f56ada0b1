// voxrt transcribe: streams audio files (or stdin) through a Recognizer in 20 ms chunks, as a
// live microphone would send them, and prints partial and final results.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <thread>

#include "audio/audio_io.h"
#include "commands.h"
#include "front_end_models.h"
#include "stream/recognizer.h"
#include "transcribe_input.h"
#include "transcript_output.h"
#include "whisper_options_args.h"

namespace voxrt::cli {
namespace {

struct TranscribeArgs {
  std::vector<std::string> files;
  std::string engine;
  std::string vad = "energy";
  std::string decoder;  // empty: beam with --lm or --hotwords, else greedy
  // Unset: the model's tuned values (with an LM), else the built-in defaults.
  std::optional<int> beam_width;
  std::optional<float> lm_weight;
  std::optional<float> word_bonus;
  int max_symbols_per_frame = decode::TransducerSearchConfig{}.max_symbols_per_frame;
  std::string lm;
  bool lexicon_only = false;
  std::string hotwords_file;
  std::optional<float> hotword_bonus;
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
  std::string output_format = "txt";
  std::string output_dir;
  bool timestamps = false;
  WhisperOptionArgs whisper;  // Whisper models (RecognizerConfig::encoder_decoder)
  bool partials = true;
  int threads = 1;
  int chunk_ms = 20;
  int stdin_rate_hz = 16000;
  int stdin_channels = 1;
  std::string stdin_format = "s16";
};

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
    // The default model's metadata names its chunk and state pairs, so a plain build suffices.
    std::cerr << "error: no engine: give --engine (or set VOXRT_ENGINE); build one with\n"
                 "  voxrt build --onnx models/default/model.onnx --engine default.engine\n";
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
  if (!args.decoder.empty() && args.decoder != "beam" && args.decoder != "greedy") {
    std::cerr << "error: --decoder '" << args.decoder << "': expected greedy or beam\n";
    return 2;
  }
  if (args.decoder == "greedy" && !args.lm.empty()) {
    std::cerr << "error: --decoder greedy: --lm needs beam search\n";
    return 2;
  }
  // Without --decoder: beam search with an LM or hotwords (CTC models need it for hotwords; a
  // transducer's greedy search takes them too, with --decoder greedy).
  const bool wants_beam = !args.lm.empty() || !args.hotwords_file.empty();
  config.decoder = args.decoder == "beam" || (args.decoder.empty() && wants_beam)
                       ? stream::DecoderKind::kBeam
                       : stream::DecoderKind::kGreedy;
  config.decoding.beam_width = args.beam_width;
  config.decoding.lm_weight = args.lm_weight;
  config.decoding.word_bonus = args.word_bonus;
  config.decoding.hotword_bonus = args.hotword_bonus;
  if (args.lexicon_only) config.decoding.lexicon_only = true;
  // Whisper-family models give times only when they decode with timestamp tokens: asked for by
  // --timestamps and by the formats that carry times.
  if (args.timestamps || args.output_format == "srt" || args.output_format == "vtt" ||
      args.output_format == "tsv")
    config.decoding.timestamps = true;
  auto whisper = whisper_options(args.whisper);
  if (!whisper) {
    std::cerr << "error: " << whisper.status().message() << "\n";
    return 2;
  }
  config.encoder_decoder = *whisper;
  config.transducer.max_symbols_per_frame = args.max_symbols_per_frame;
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
    int line_number = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto phrase = (*recognizer)->normalise_hotword(line);
      if (!phrase) {
        std::cerr << "error: " << args.hotwords_file << ":" << line_number << ": "
                  << phrase.status().message() << "\n";
        return 2;
      }
      options.hotwords.push_back(std::move(*phrase));
    }
  }
  if (auto decoding = (*recognizer)->decoding_for(options);
      decoding && decoding->decoder == stream::DecoderKind::kBeam) {
    // Transducers and encoder_decoder models take the transducer's beam (default 4).
    const bool transducer = (*recognizer)->model_family() == "transducer" ||
                            (*recognizer)->model_family() == "encoder_decoder";
    std::cerr << "[voxrt] beam search: beam "
              << (transducer ? decoding->transducer.beam_width : decoding->beam.beam_width);
    if (decoding->use_lm) {
      std::cerr << ", LM weight " << decoding->beam.lm_weight << ", word bonus "
                << decoding->beam.word_insertion_bonus
                << (decoding->lexicon_only ? ", words of the LM only" : "");
    }
    if (!options.hotwords.empty())
      std::cerr << ", " << options.hotwords.size() << " hotword(s), bonus "
                << decoding->hotword_bonus << " per unit";
    std::cerr << "\n";
  }

  OutputOptions output;
  {
    auto format = parse_output_format(args.json ? "json" : args.output_format);
    if (!format) {
      std::cerr << "error: " << format.status().message() << "\n";
      return 2;
    }
    output.format = *format;
    output.timestamps = args.timestamps;
  }
  if (!args.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.output_dir, ec);
    if (ec || !std::filesystem::is_directory(args.output_dir)) {
      std::cerr << "error: --output-dir " << args.output_dir << ": cannot create the folder ("
                << ec.message() << ")\n";
      return 2;
    }
  }
  RawPcmFormat raw;
  {
    auto encoding = audio::parse_pcm_encoding(args.stdin_format);
    if (!encoding) {
      std::cerr << "error: --stdin-format: " << encoding.status().message() << "\n";
      return 2;
    }
    raw.encoding = *encoding;
    raw.sample_rate_hz = args.stdin_rate_hz;
    raw.channels = args.stdin_channels;
  }

  // Each input is read and reported on its own: a bad one is an error on stderr and a non-zero
  // exit at the end, and the others are still transcribed. Results come out in input order.
  struct Source {
    std::string name;
    audio::AudioClip clip;
    std::unique_ptr<stream::Stream> stream;
    std::size_t next = 0;
    std::vector<stream::StreamResult> pending;  // results not printed yet (an earlier input runs)
    std::vector<stream::StreamResult> finals;
    bool done = false;
  };
  int failed_inputs = 0;
  std::vector<Source> sources;
  for (const auto& file : args.files) {
    auto input = read_transcribe_input(file, raw);
    if (!input) {
      std::cerr << "error: " << input.status().message() << "\n";
      ++failed_inputs;
      continue;
    }
    Source s;
    s.name = file;
    s.clip = std::move(input->clip);
    if (input->stdin_was_file) {
      std::cerr << "[voxrt] stdin: an audio file (" << s.clip.sample_rate_hz << " Hz, "
                << s.clip.source_channels << " channel(s)); --stdin-* flags do not apply\n";
    }
    if (s.clip.samples.empty()) std::cerr << "[voxrt] " << file << ": no audio (0 samples)\n";
    stream::StreamOptions o = options;
    o.sample_rate_hz = s.clip.sample_rate_hz;
    auto st = (*recognizer)->open_stream(o);
    if (!st) {
      std::cerr << "error: " << file << ": " << st.status().message() << "\n";
      ++failed_inputs;
      continue;
    }
    s.stream = std::move(*st);
    if (s.clip.samples.empty()) (void)s.stream->input_finished();
    sources.push_back(std::move(s));
  }

  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  const bool live_partials =
      tty && args.partials && args.output_dir.empty() && output.format == OutputFormat::kTxt;
  std::size_t head = 0;  // the first input whose results are not all out
  auto print = [&](const Source& s, const stream::StreamResult& r) {
    if (!args.output_dir.empty()) return;
    if (live_partials && !r.result.is_final) {
      std::cout << "\r\033[K" << s.name << ": " << r.result.text << "..." << std::flush;
      return;
    }
    const std::string text = render_result(output, s.name, r);
    if (text.empty()) return;
    if (live_partials) std::cout << "\r\033[K";
    std::cout << text << std::flush;
  };
  // A finished input's document: to its file under --output-dir, else (srt/vtt/tsv) to stdout.
  auto finish = [&](const Source& s) -> bool {
    if (args.output_dir.empty()) {
      if (output.format == OutputFormat::kSrt || output.format == OutputFormat::kVtt ||
          output.format == OutputFormat::kTsv) {
        std::cout << render_document(output, s.name, s.finals) << std::flush;
      }
      return true;
    }
    const std::string path = output_path(args.output_dir, s.name, output.format);
    std::ofstream out(path, std::ios::binary);
    out << render_document(output, s.name, s.finals);
    if (!out) {
      std::cerr << "error: " << path << ": cannot write the transcript\n";
      return false;
    }
    std::cerr << "[voxrt] " << s.name << " -> " << path << "\n";
    return true;
  };
  auto flush_in_order = [&] {
    while (head < sources.size()) {
      Source& s = sources[head];
      for (const auto& r : s.pending) print(s, r);
      s.pending.clear();
      if (!s.done) break;
      if (!finish(s)) ++failed_inputs;
      ++head;
    }
  };

  using clock = std::chrono::steady_clock;
  std::vector<double> chunk_latency_ms;
  double audio_s = 0;
  const auto start = clock::now();
  auto next_tick = start;
  std::vector<stream::Stream*> all;
  for (auto& s : sources) all.push_back(s.stream.get());
  for (bool active = !sources.empty(); active;) {
    active = false;
    const auto round_start = clock::now();
    for (auto& s : sources) {
      const std::size_t step = static_cast<std::size_t>(s.clip.sample_rate_hz) *
                               static_cast<std::size_t>(args.chunk_ms) / 1000;
      if (s.next < s.clip.samples.size()) {
        const std::size_t n =
            std::min(std::max<std::size_t>(step, 1), s.clip.samples.size() - s.next);
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
      for (auto& r : s.stream->take_results()) {
        if (r.result.is_final) s.finals.push_back(r);
        s.pending.push_back(std::move(r));
      }
      s.done = s.stream->finished();
      active = active || !s.done;
    }
    flush_in_order();
    if (args.realtime) {
      next_tick += std::chrono::milliseconds(args.chunk_ms);
      std::this_thread::sleep_until(next_tick);
    }
  }
  flush_in_order();
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
  if (failed_inputs > 0) {
    std::cerr << "error: " << failed_inputs << " of " << args.files.size()
              << " input(s) failed (see above)\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_transcribe_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TranscribeArgs>();
  CLI::App* cmd =
      app.add_subcommand("transcribe", "Recognize speech in audio files, streamed in 20 ms chunks");
  cmd->footer(
      "The bundled default model (models/default, a streaming Conformer) is for English\n"
      "smart-speaker commands (music, timers, lights, weather, lists, calls) and was trained on\n"
      "synthetic voices only (espeak-ng, flite): it is not good yet at real human speech, noisy\n"
      "rooms, open dictation or words outside its command lists; an ARPA LM of the commands\n"
      "(--lm) removes a quarter to two fifths of its errors. models/default/MODEL_CARD.md has the\n"
      "measured WER beside Debian's pocketsphinx.\n"
      "Each file is a stream; several files are decoded concurrently, batched through the engine,\n"
      "and their results come out in the order of the files. A file that cannot be read is an\n"
      "error on stderr (and exit status 1 at the end); the others are still transcribed.\n"
      "'-' reads stdin: an audio file (a WAV piped in) is recognised by its header, anything else\n"
      "is raw PCM as --stdin-format, --stdin-rate and --stdin-channels say.\n"
      "Output (--output-format): txt \"FILE: text\" per utterance (--timestamps adds [start -->\n"
      "end]); json one line per result, partials too: {\"file\", \"text\", \"is_final\",\n"
      "\"words\": [{\"word\", \"start\", \"end\", \"conf\"}]} (seconds), and with Whisper models\n"
      "\"language\" and (--timestamps) \"segments\": [{\"text\", \"start\", \"end\"}]; srt, vtt, "
      "tsv\n"
      "(start and end in ms) per file. --output-dir DIR writes DIR/<file name>.<format> instead.\n"
      "Whisper models decode with timestamp tokens under --timestamps, srt, vtt and tsv; each\n"
      "30 s window is conditioned on the text before it (--no-condition-on-previous-text: not),\n"
      "and --temperature-fallback decodes a window again by seeded sampling at 0.2 .. 1.0 while\n"
      "its text is too repetitive or unsure (OpenAI Whisper's rules, docs/model_contract.md).\n"
      "The real-time factor and per-chunk latency percentiles go to stderr.\n"
      "Examples:\n"
      "  voxrt transcribe --engine default.engine samples/play_music.wav --json\n"
      "  voxrt transcribe --engine default.engine samples/play_music.wav --output-format srt\n"
      "  voxrt transcribe --engine default.engine --stdin-rate 16000 - < samples/play_music.wav");
  cmd->add_option("files", args->files, "WAV/FLAC/... files, or - for stdin")->required();
  cmd->add_option("--engine", args->engine,
                  "Engine of a ctc_streaming model, or an engine bundle folder (voxrt build "
                  "--model-dir) (default: $VOXRT_ENGINE)");
  cmd->add_option("--vad", args->vad, "silero | energy | off")->capture_default_str();
  cmd->add_option("--vad-model", args->vad_model,
                  "Silero VAD v5: .onnx (built once into ~/.cache/voxrt) or an engine "
                  "(default: $VOXRT_VAD_MODEL)");
  cmd->add_option("--vad-onset", args->vad_onset, "Silero: speech starts at probability >= this")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("--vad-offset", args->vad_offset, "Silero: speech ends below this")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("--vad-min-speech-ms", args->vad_min_speech_ms, "Silero: shortest speech")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--vad-min-silence-ms", args->vad_min_silence_ms,
                  "Silero: silence that ends speech")
      ->capture_default_str()
      ->check(CLI::Range(0, 60000));
  cmd->add_option("--decoder", args->decoder,
                  "greedy | beam (default: beam with --lm or --hotwords, else greedy)");
  cmd->add_option("--beam", args->beam_width,
                  "Beam width, 1..1024 (CTC prefix beam; a transducer's modified beam search "
                  "takes 1..64); default: the model's tuned value with an LM, else 8 (CTC) or 4 "
                  "(transducer)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-symbols-per-frame", args->max_symbols_per_frame,
                  "Transducer greedy search (and TDT beam search): units one encoder frame may "
                  "emit, 1..16 (0: the model's default: 1 for icefall/sherpa-onnx transducers, "
                  "NeMo's 10 for NeMo transducers)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  cmd->add_option("--lm-weight", args->lm_weight,
                  "Weight of the LM's log probability in beam search, 0..10 (default: the "
                  "model's tuned value, else 0.5)")
      ->check(CLI::Range(0.0f, 10.0f));
  cmd->add_option("--word-bonus", args->word_bonus,
                  "Log-score bonus per word the LM scores, -20..20 (offsets the LM's pull "
                  "towards deleting words; default: the model's tuned value, else 0)")
      ->check(CLI::Range(-20.0f, 20.0f));
  cmd->add_option("--lm", args->lm, "Word n-gram LM (ARPA) for beam search")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--lexicon-only", args->lexicon_only,
                "With --lm: only words of the LM may be spelled");
  cmd->add_option("--hotwords", args->hotwords_file,
                  "File of phrases to boost, one per line (case and punctuation are normalised "
                  "to the model's units)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--hotword-bonus", args->hotword_bonus,
                  "Log-score bonus per matched unit, 0..20 (default: the model's, else 1.5)")
      ->check(CLI::Range(0.0f, 20.0f));
  cmd->add_option("--wake-word", args->wake_word,
                  "Wake-word head (.onnx/.engine, e.g. hey_jarvis_v0.1.onnx) or its folder; "
                  "recognition starts once it fires");
  cmd->add_option("--wake-mel", args->wake_mel,
                  "openWakeWord melspectrogram model (default: beside the head)");
  cmd->add_option("--wake-embedding", args->wake_embedding,
                  "openWakeWord embedding model (default: beside the head)");
  cmd->add_option("--wake-threshold", args->wake_threshold, "Wake-word score that fires")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  cmd->add_flag("--wake-stay-awake", args->wake_stay_awake,
                "After the wake word, recognise to the end (default: one utterance, then wait "
                "for the wake word again)");
  cmd->add_flag("--realtime", args->realtime, "Pace the audio like a live microphone");
  cmd->add_flag("--json", args->json, "The same as --output-format json");
  cmd->add_option("--output-format", args->output_format, "txt | json | srt | vtt | tsv")
      ->capture_default_str();
  cmd->add_option(
      "--output-dir", args->output_dir,
      "Write each input's transcript to DIR/<its name>.<format> (stdin: stdin.<format>)");
  cmd->add_flag("--timestamps", args->timestamps,
                "txt: each utterance with its [start --> end] time; Whisper models: decode with "
                "timestamp tokens (segments in the json output)");
  add_whisper_options(cmd, args->whisper);
  cmd->add_option("--threads", args->threads, "Kernel threads, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option(
         "--chunk-ms", args->chunk_ms,
         "Milliseconds of audio sent per step, 1..60000 (the result does not depend on it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  cmd->add_option("--stdin-rate", args->stdin_rate_hz,
                  "Sample rate of raw stdin audio, 1000..384000")
      ->capture_default_str()
      ->check(CLI::Range(1000, 384000));
  cmd->add_option("--stdin-format", args->stdin_format,
                  "s16 | s24 | f32 raw stdin samples (little-endian)")
      ->capture_default_str();
  cmd->add_option("--stdin-channels", args->stdin_channels,
                  "Interleaved channels of raw stdin audio, 1..64 (averaged to mono)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->callback([args, &exit_code] { exit_code = run_transcribe(*args); });
}

}  // namespace voxrt::cli
