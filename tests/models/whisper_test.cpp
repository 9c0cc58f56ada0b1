// The encoder_decoder family end to end on a tiny Whisper-architecture model exported the way
// Hugging Face optimum does it (tests/models/optimum_whisper.py, random weights tuned so that a
// window says 16 to 21 tokens on the test clips and the two clips detect different languages):
// `voxrt build --model-dir` imports it without hand-written metadata; the bundle's three engines
// match onnxruntime on the exported ONNX; the Recognizer (and the `voxrt transcribe` program)
// give exactly the tokens, text, language and segments of the Python reference decoder (torch,
// the same modules, no KV cache) on a short clip, a 68 s clip (3 windows) and a clip whose second
// window is not decoded: greedy and beam 3, with and without timestamp tokens, the language
// detected per stream or built in, each window conditioned on the text before it (or not, or
// after an initial prompt), the temperature fallback's sampling, the translate task; a stream's
// text does not depend on which streams share its batch or how its audio is cut; the driver's VAD
// gives no text for a silent stream; import errors name the file and key; the window rules
// (window_search.h), the timestamp rules and segments (timestamp_rules.h) and the beam search
// (beam_search.h) on hand-made logits; and the family batches three streams' windows into one
// encoder call, one detection call and one prompt call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audio/audio_io.h"
#include "audio/feature_extractor.h"
#include "audio/whisper_log_mel.h"
#include "model_import/model_dir_import.h"
#include "model_test_files.h"
#include "ort_compare.h"
#include "stream/bundle_manifest.h"
#include "stream/encoder_decoder/beam_search.h"
#include "stream/encoder_decoder/encoder_decoder_model.h"
#include "stream/encoder_decoder/timestamp_rules.h"
#include "stream/encoder_decoder/window_prompt.h"
#include "stream/encoder_decoder/window_search.h"
#include "stream/recognizer.h"
#include "stream_feeding.h"

namespace voxrt {
namespace {
namespace fs = std::filesystem;
using model_test::all_close;
using model_test::random_f32;
using model_test::run_capture;
using model_test::write_wav;

// VOXRT_TEST_DEVICE=cuda (ctest's gpu_models_whisper) builds every engine for the GPU, through
// the CUDA plugin that libvoxrt.so opens; the CPU and GPU runs each in a folder of their own.
DeviceKind test_device() {
  const char* device = std::getenv("VOXRT_TEST_DEVICE");
  return device != nullptr && std::string(device) == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
}

fs::path work_dir() {
  return model_test::process_work_dir(test_device() == DeviceKind::kCuda ? "voxrt_whisper_test_cuda"
                                                                         : "voxrt_whisper_test");
}

std::string script() {
  return (model_test::source_dir() / "tests/models/optimum_whisper.py").string();
}

struct Segment {
  std::string text;
  double start_s = 0.0;
  double end_s = 0.0;
};

struct Reference {
  std::vector<int> tokens;  // of the windows that are not silence, in order
  std::string text;
  int windows = 0;
  int too_short = 0;  // windows not decoded
  std::vector<std::string> window_texts;
  std::string language;
  std::vector<Segment> segments;
  // Per decoded window: the temperature of the result kept, and the prompt.
  std::vector<double> temperatures;
  std::vector<std::vector<int>> prompts;
};

// The Python reference decoder's results for `wavs` (optimum_whisper.py reference `options`).
std::vector<Reference> run_reference(const fs::path& export_dir,
                                     const std::vector<std::string>& wavs,
                                     const std::string& options) {
  std::string cmd =
      "/usr/bin/python3 '" + script() + "' reference '" + export_dir.string() + "' " + options;
  for (const std::string& wav : wavs) cmd += " '" + wav + "'";
  cmd += " 2>/dev/null";
  std::vector<Reference> references;
  std::istringstream lines(run_capture(cmd));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << cmd << ": not JSON: " << line;
      return {};
    }
    Reference r;
    r.text = j["text"].get<std::string>();
    r.language = j["language"].get<std::string>();
    for (const auto& window : j["windows"]) {
      ++r.windows;
      if (window.contains("too_short")) ++r.too_short;
      r.window_texts.push_back(window["text"].get<std::string>());
      if (window.contains("temperature")) {
        r.temperatures.push_back(window["temperature"].get<double>());
        r.prompts.push_back(window["prompt"].get<std::vector<int>>());
      }
      if (window["silence"].get<bool>()) continue;
      for (const auto& t : window["tokens"]) r.tokens.push_back(t.get<int>());
    }
    for (const auto& s : j["segments"])
      r.segments.push_back(
          {s["text"].get<std::string>(), s["start"].get<double>(), s["end"].get<double>()});
    references.push_back(r);
  }
  EXPECT_EQ(references.size(), wavs.size()) << "the reference decoder failed: " << cmd;
  return references;
}

std::string tokens_string(const std::vector<int>& tokens);

class WhisperTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(work_dir());
    fs::create_directories(work_dir());
    export_dir_ = work_dir() / "export";
    bundle_ = work_dir() / "bundle";
    auto clip =
        audio::read_audio_file((model_test::source_dir() / "samples/play_music.wav").string());
    ASSERT_TRUE(clip.has_value()) << clip.status().to_string();
    // A short clip, and a 68 s one (3 windows): the clip reversed, louder and quieter, with
    // pauses, over and over.
    wavs_ = {(model_test::source_dir() / "samples/play_music.wav").string(),
             (work_dir() / "long.wav").string()};
    std::vector<float> long_clip;
    for (int k = 0; long_clip.size() < 68 * 16000; ++k) {
      const float gain = 0.3f + 0.2f * static_cast<float>(k % 4);
      if (k % 2 == 0) {
        for (float s : clip->samples) long_clip.push_back(gain * s);
      } else {
        for (auto it = clip->samples.rbegin(); it != clip->samples.rend(); ++it)
          long_clip.push_back(gain * *it);
      }
      long_clip.resize(long_clip.size() + 1600 * static_cast<std::size_t>(k % 5), 0.0f);
    }
    long_clip.resize(68 * 16000);
    write_wav(wavs_[1], long_clip);
    // 30 s less 6.25 ms: its last frame reaches over the window boundary, so a second window
    // holds one frame of audio, which is not decoded.
    wavs_.push_back((work_dir() / "edge.wav").string());
    long_clip.resize(480000 - 100);
    write_wav(wavs_[2], long_clip);
    const std::string cmd = "/usr/bin/python3 '" + script() + "' export '" + export_dir_.string() +
                            "' > '" + (work_dir() / "export.log").string() + "' 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "export failed: " << cmd;
    model_import::ModelDirImportOptions options;
    options.model_dir = export_dir_.string();
    options.bundle_dir = bundle_.string();
    options.build.autotune = false;
    options.build.device = test_device();
    options.max_batch = 4;
    auto imported = model_import::import_model_dir(options);
    // Without a GPU the CUDA run skips; any other failure to build for it fails.
    if (test_device() == DeviceKind::kCuda && !imported.has_value() &&
        imported.status().message().find("no CUDA device") != std::string::npos) {
      skip_reason_ = "no CUDA engines (" + imported.status().message() + ")";
      return;
    }
    ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
    EXPECT_EQ(imported->family, "encoder_decoder");
    EXPECT_EQ(imported->layout, "optimum-whisper");
    // The reference decoder's tokens and text per clip (the language detected: the bundle is
    // built without one).
    references_ = run_reference(export_dir_, wavs_, "");
    ASSERT_EQ(references_.size(), wavs_.size());
    ready_ = true;
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(ready_) << "set-up failed; see " << work_dir();
  }

  // `beam_width` 0: greedy.
  static std::shared_ptr<stream::Recognizer> make(int max_batch, stream::VadKind vad,
                                                  bool timestamps = false, int beam_width = 0,
                                                  const fs::path& bundle = bundle_) {
    stream::RecognizerConfig config;
    config.engine_path = bundle.string();
    config.vad = vad;
    if (timestamps) config.decoding.timestamps = true;
    if (beam_width > 0) {
      config.decoder = stream::DecoderKind::kBeam;
      config.decoding.beam_width = beam_width;
    }
    config.max_batch = max_batch;
    config.max_streams = 8;
    auto r = stream::Recognizer::create(config);
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : nullptr;
  }

  // A recognizer (VAD off, greedy unless `beam_width`) with the family's options.
  static std::shared_ptr<stream::Recognizer> make_with(const stream::EncoderDecoderOptions& options,
                                                       int beam_width = 0,
                                                       const fs::path& bundle = bundle_) {
    stream::RecognizerConfig config;
    config.engine_path = bundle.string();
    config.vad = stream::VadKind::kOff;
    if (beam_width > 0) {
      config.decoder = stream::DecoderKind::kBeam;
      config.decoding.beam_width = beam_width;
    }
    config.encoder_decoder = options;
    config.max_batch = 4;
    config.max_streams = 8;
    auto r = stream::Recognizer::create(config);
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : nullptr;
  }

  // Every clip batched together and each alone: the reference's tokens and text.
  static void expect_reference(const std::shared_ptr<stream::Recognizer>& r,
                               const std::vector<Reference>& references) {
    ASSERT_TRUE(r);
    ASSERT_EQ(references.size(), wavs_.size());
    const auto together = run(*r, wavs_, {3200, 4000, 16000});
    for (std::size_t i = 0; i < wavs_.size(); ++i) {
      SCOPED_TRACE(wavs_[i]);
      EXPECT_EQ(tokens_string(together[i].tokens), tokens_string(references[i].tokens));
      EXPECT_EQ(together[i].text, references[i].text);
      const auto alone = run(*r, {wavs_[i]}, {8000});
      EXPECT_EQ(tokens_string(alone[0].tokens), tokens_string(references[i].tokens));
    }
  }

  struct Output {
    std::string text;
    std::vector<int> tokens;
    int finals = 0;
    std::vector<std::string> partials;
    std::string language;
    std::vector<Segment> segments;
  };

  // Runs each file as a stream fed in pieces of `pieces[i]` samples, all advanced together.
  static std::vector<Output> run(stream::Recognizer& r, const std::vector<std::string>& files,
                                 const std::vector<std::size_t>& pieces) {
    std::vector<Output> out(files.size());
    model_test::feed_files_as_streams(
        r, files, pieces, {}, [&](std::size_t i, const stream::StreamResult& result) {
          if (!result.result.is_final) {
            out[i].partials.push_back(result.result.text);
            return;
          }
          ++out[i].finals;
          out[i].text = result.result.text;
          out[i].language = result.result.language;
          out[i].segments.clear();
          for (const auto& seg : result.result.segments)
            out[i].segments.push_back({seg.text, seg.start_s, seg.end_s});
          out[i].tokens.clear();
          for (const auto& t : result.result.tokens) out[i].tokens.push_back(t.id);
        });
    return out;
  }

  static inline fs::path export_dir_;
  static inline fs::path bundle_;
  static inline std::vector<std::string> wavs_;
  static inline std::vector<Reference> references_;
  static inline bool ready_ = false;
  static inline std::string skip_reason_;
};

std::string tokens_string(const std::vector<int>& tokens) {
  std::string out;
  for (int t : tokens) out += (out.empty() ? "" : " ") + std::to_string(t);
  return out;
}

// The bundle's engines (as the Recognizer runs them) against onnxruntime on the exported files.
TEST_F(WhisperTest, BundleEnginesMatchOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  std::mt19937 rng(27);
  auto check = [&](const char* role, const char* onnx, const std::vector<model_test::Input>& in) {
    SCOPED_TRACE(role);
    auto manifest = stream::BundleManifest::read(bundle_.string());
    ASSERT_TRUE(manifest.has_value());
    auto path = manifest->engine_path(bundle_.string(), role);
    ASSERT_TRUE(path.has_value());
    auto engine = Engine::load_file(*path);
    ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
    auto context = (*engine)->create_context(1);
    ASSERT_TRUE(context.has_value());
    auto ours = (*context)->run(model_test::engine_inputs(**engine, in));
    ASSERT_TRUE(ours.has_value()) << ours.status().to_string();
    std::vector<std::string> names, output_names;
    std::vector<Tensor> values;
    for (const auto& i : in) {
      names.push_back(i.name);
      values.push_back(i.value);
    }
    for (const auto& o : (*engine)->outputs()) output_names.push_back(o.name);
    auto reference =
        ort::run_onnxruntime((export_dir_ / onnx).string(), names, values, output_names);
    ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
    ASSERT_EQ(ours->size(), reference->outputs.size());
    for (std::size_t o = 0; o < ours->size(); ++o) {
      EXPECT_TRUE(all_close((*ours)[o], reference->outputs[o], 1e-4, 1e-4,
                            std::string(onnx) + " " + output_names[o]));
    }
  };
  check("encoder", "encoder_model.onnx", {{"input_features", random_f32({2, 80, 3000}, rng)}});
  check("decoder", "decoder_model.onnx",
        {{"input_ids", model_test::i64_tensor({2, 4}, {269, 270, 273, 277, 269, 271, 273, 277})},
         {"encoder_hidden_states", random_f32({2, 1500, 64}, rng)}});
  std::vector<model_test::Input> step = {
      {"input_ids", model_test::i64_tensor({3, 1}, {42, 7, 260})}};
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* side : {"decoder", "encoder"}) {
      for (const char* kv : {"key", "value"}) {
        const std::int64_t length = std::string(side) == "decoder" ? 9 : 1500;
        step.push_back({"past_key_values." + std::to_string(layer) + "." + side + "." + kv,
                        random_f32({3, 4, length, 16}, rng)});
      }
    }
  }
  check("decoder_with_past", "decoder_with_past_model.onnx", step);
}

TEST_F(WhisperTest, RecognizerGivesTheReferenceTokensAndText) {
  auto r = make(4, stream::VadKind::kOff);
  ASSERT_TRUE(r);
  // The reference model says something, and the long clip has its three windows.
  EXPECT_GE(references_[0].tokens.size(), 5u);
  EXPECT_EQ(references_[1].windows, 3);
  EXPECT_EQ(references_[2].windows, 2);
  EXPECT_EQ(references_[2].too_short, 1);
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    const auto out = run(*r, {wavs_[i]}, {3200});
    SCOPED_TRACE(wavs_[i]);
    EXPECT_EQ(out[0].finals, 1);
    EXPECT_EQ(tokens_string(out[0].tokens), tokens_string(references_[i].tokens));
    EXPECT_EQ(out[0].text, references_[i].text);
  }
  // Partial results: the text of the windows decoded so far, one more window each time.
  const auto out = run(*r, {wavs_[1]}, {3200});
  const auto& windows = references_[1].window_texts;
  ASSERT_EQ(windows.size(), 3u);
  auto trimmed = [](std::string t) {
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    return t;
  };
  const std::vector<std::string> expected = {trimmed(windows[0]), trimmed(windows[0] + windows[1])};
  // The third window's text changes the partial only where it adds something.
  ASSERT_GE(out[0].partials.size(), 2u);
  EXPECT_EQ(out[0].partials[0], expected[0]);
  EXPECT_EQ(out[0].partials[1], expected[1]);
}

TEST_F(WhisperTest, TextDoesNotDependOnBatchMatesOrPieces) {
  auto batched = make(4, stream::VadKind::kOff);
  auto alone = make(1, stream::VadKind::kOff);
  ASSERT_TRUE(batched && alone);
  // The long clip beside two others (its first window batched with theirs, its later windows
  // alone or not), fed in other piece sizes.
  const std::vector<std::string> files = {wavs_[1], wavs_[0], wavs_[1]};
  const auto together = run(*batched, files, {4000, 1111, 16000});
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto single = run(*alone, {files[i]}, {7777});
    EXPECT_EQ(together[i].text, single[0].text) << "stream " << i;
    EXPECT_EQ(tokens_string(together[i].tokens), tokens_string(single[0].tokens)) << i;
  }
  EXPECT_EQ(together[0].text, references_[1].text);
  EXPECT_EQ(together[1].text, references_[0].text);
}

TEST_F(WhisperTest, TheVadGivesNoTextForSilence) {
  const fs::path silence = work_dir() / "silence.wav";
  write_wav(silence, std::vector<float>(16000 * 5, 0.0f));
  auto r = make(4, stream::VadKind::kEnergy);
  ASSERT_TRUE(r);
  const auto out = run(*r, {silence.string(), wavs_[0]}, {1600, 1600});
  EXPECT_EQ(out[0].text, "");
  EXPECT_EQ(out[0].finals, 1);
  // Speech still goes through the VAD into the model.
  EXPECT_EQ(out[1].text, references_[0].text);
}

TEST_F(WhisperTest, TranscribeProgramGivesTheReferenceText) {
  const char* cli = std::getenv("VOXRT_CLI");
  if (cli == nullptr) GTEST_SKIP() << "VOXRT_CLI (the voxrt program) is not set";
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    const std::string cmd = std::string("'") + cli + "' transcribe --json --engine '" +
                            bundle_.string() + "' --vad off '" + wavs_[i] + "' 2>/dev/null";
    std::istringstream lines(run_capture(cmd));
    int finals = 0;
    std::string text;
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << cmd << ": " << line;
      if (!j.value("is_final", false)) continue;
      ++finals;
      text = j["text"].get<std::string>();
    }
    EXPECT_EQ(finals, 1) << cmd;
    EXPECT_EQ(text, references_[i].text) << cmd;
  }
}

// The Whisper options through `voxrt transcribe`: the fallback, its threshold and seed, an
// initial prompt and the task, on every clip: the reference's text with the same options; a
// malformed --temperatures is refused with the item named.
TEST_F(WhisperTest, TranscribeProgramTakesTheWhisperOptions) {
  const char* cli = std::getenv("VOXRT_CLI");
  if (cli == nullptr) GTEST_SKIP() << "VOXRT_CLI (the voxrt program) is not set";
  const std::string options =
      "--temperature-fallback --logprob-threshold -5.175 --seed 7 --initial-prompt 'hello world' "
      "--task translate";
  const auto references =
      run_reference(export_dir_, wavs_,
                    "--temperatures 0,0.2,0.4,0.6,0.8,1.0 --logprob-threshold -5.175 --seed 7 "
                    "--initial-prompt 'hello world' --task translate");
  ASSERT_EQ(references.size(), wavs_.size());
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    const std::string cmd = std::string("'") + cli + "' transcribe --json --engine '" +
                            bundle_.string() + "' --vad off " + options + " '" + wavs_[i] +
                            "' 2>/dev/null";
    std::istringstream lines(run_capture(cmd));
    std::string text;
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << cmd << ": " << line;
      if (j.value("is_final", false)) text = j["text"].get<std::string>();
    }
    EXPECT_EQ(text, references[i].text) << cmd;
  }
  const std::string bad = std::string("'") + cli + "' transcribe --engine '" + bundle_.string() +
                          "' --temperatures 0,x '" + wavs_[0] + "' 2>&1";
  EXPECT_NE(run_capture(bad).find("'x' is not a number"), std::string::npos) << bad;
}

std::string segments_string(const std::vector<Segment>& segments) {
  std::string out;
  char times[64];
  for (const Segment& s : segments) {
    std::snprintf(times, sizeof(times), " [%.3f, %.3f] ", s.start_s, s.end_s);
    out += times + s.text + "\n";
  }
  return out;
}

// Language detection: the bundle names no language, so each stream's language comes from its
// first window, and the clips were picked to say different ones (the short clip <|de|>, the long
// one <|en|>); every window of a stream is decoded with its stream's language, as the reference
// does.
TEST_F(WhisperTest, DetectsTheLanguageOfEachStreamFromItsFirstWindow) {
  auto r = make(4, stream::VadKind::kOff);
  ASSERT_TRUE(r);
  EXPECT_EQ(references_[0].language, "de");
  EXPECT_EQ(references_[1].language, "en");
  // All three streams in one batch: their first windows' detection shares one decoder call.
  const auto out = run(*r, wavs_, {3200, 3200, 3200});
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    SCOPED_TRACE(wavs_[i]);
    EXPECT_EQ(out[i].language, references_[i].language);
    EXPECT_EQ(tokens_string(out[i].tokens), tokens_string(references_[i].tokens));
    EXPECT_EQ(out[i].text, references_[i].text);
  }
}

// A bundle built with a language (voxrt build --language en) decodes every stream with it and
// detects nothing: the short clip, detected as <|de|> above, is decoded as <|en|> (the
// reference's tokens with that prompt), and no decoder call is spent on detection.
TEST_F(WhisperTest, ABuiltInLanguageSkipsDetection) {
  const fs::path bundle = work_dir() / "bundle_en";
  model_import::ModelDirImportOptions options;
  options.model_dir = export_dir_.string();
  options.bundle_dir = bundle.string();
  options.build.autotune = false;
  options.build.device = test_device();
  options.max_batch = 2;
  options.language = "en";
  auto imported = model_import::import_model_dir(options);
  ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
  const auto english = run_reference(export_dir_, {wavs_[0]}, "--language en");
  ASSERT_EQ(english.size(), 1u);
  EXPECT_EQ(english[0].language, "en");
  auto r = make(2, stream::VadKind::kOff, false, 0, bundle);
  ASSERT_TRUE(r);
  const auto out = run(*r, {wavs_[0]}, {3200});
  EXPECT_EQ(out[0].language, "en");
  EXPECT_EQ(tokens_string(out[0].tokens), tokens_string(english[0].tokens));
  EXPECT_EQ(out[0].text, english[0].text);
  // The family's calls on one window: a prompt call, no detection (the detecting bundle: one).
  for (const auto& [path, detections] : {std::pair{bundle, 0}, std::pair{bundle_, 1}}) {
    stream::RecognizerConfig config;
    config.engine_path = path.string();
    auto loaded = stream::load_model_family(config);
    ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
    auto* model = dynamic_cast<stream::EncoderDecoderModel*>(loaded->get());
    ASSERT_NE(model, nullptr);
    auto s = model->open_stream(stream::StreamOptions{}, stream::ResolvedDecoding{});
    ASSERT_TRUE(s.has_value());
    const std::vector<float> window(3000 * 80, audio::kWhisperSilenceLogMel + 1.0f);
    const stream::ChunkInput input{s->get(), window.data(), 3000};
    ASSERT_TRUE(model->run_batch({&input, 1}, 3000).is_ok());
    EXPECT_EQ(model->calls().language_detection, detections) << path;
    EXPECT_EQ(model->calls().decoder, 1) << path;
  }
  // Asking for an unknown language is an import error that names the file and key.
  options.language = "xx";
  options.bundle_dir = (work_dir() / "bundle_xx").string();
  imported = model_import::import_model_dir(options);
  ASSERT_FALSE(imported.has_value());
  EXPECT_NE(imported.status().message().find("lang_to_id has no '<|xx|>'"), std::string::npos)
      << imported.status().message();
}

// Timestamps: the tokens (timestamps included), text and segments of the reference with
// OpenAI's timestamp rules, on the short clip, the 3-window clip (segment times offset by each
// window's start) and the clip whose second window is not decoded.
TEST_F(WhisperTest, TimestampsGiveTheReferenceSegments) {
  const auto references = run_reference(export_dir_, wavs_, "--timestamps");
  ASSERT_EQ(references.size(), wavs_.size());
  auto r = make(4, stream::VadKind::kOff, true);
  ASSERT_TRUE(r);
  const auto together = run(*r, wavs_, {3200, 4000, 16000});
  bool later_window_segment = false;
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    SCOPED_TRACE(wavs_[i]);
    EXPECT_EQ(together[i].finals, 1);
    EXPECT_EQ(together[i].language, references[i].language);
    EXPECT_EQ(tokens_string(together[i].tokens), tokens_string(references[i].tokens));
    EXPECT_EQ(together[i].text, references[i].text);
    EXPECT_EQ(segments_string(together[i].segments), segments_string(references[i].segments));
    for (const Segment& s : references[i].segments) later_window_segment |= s.start_s >= 30.0;
  }
  // The test means something: the clips have segments, some in a later window.
  EXPECT_GE(references[0].segments.size(), 2u);
  EXPECT_TRUE(later_window_segment);
  // Without timestamps the same bundle says no timestamp tokens and gives no segments.
  const auto plain = run(*make(4, stream::VadKind::kOff), {wavs_[0]}, {3200});
  EXPECT_TRUE(plain[0].segments.empty());
  EXPECT_EQ(plain[0].text, references_[0].text);
}

// Beam search (beam 3): the reference's tokens and text on every clip, the streams batched (their
// beams share the decoder calls) or alone, with and without timestamps.
TEST_F(WhisperTest, BeamSearchGivesTheReferenceTokens) {
  for (const bool timestamps : {false, true}) {
    SCOPED_TRACE(timestamps ? "timestamps" : "no timestamps");
    const auto references =
        run_reference(export_dir_, wavs_, timestamps ? "--beam 3 --timestamps" : "--beam 3");
    ASSERT_EQ(references.size(), wavs_.size());
    auto batched = make(4, stream::VadKind::kOff, timestamps, 3);
    auto alone = make(1, stream::VadKind::kOff, timestamps, 3);
    ASSERT_TRUE(batched && alone);
    const auto together = run(*batched, wavs_, {3200, 4000, 16000});
    for (std::size_t i = 0; i < wavs_.size(); ++i) {
      SCOPED_TRACE(wavs_[i]);
      EXPECT_EQ(tokens_string(together[i].tokens), tokens_string(references[i].tokens));
      EXPECT_EQ(together[i].text, references[i].text);
      EXPECT_EQ(segments_string(together[i].segments), segments_string(references[i].segments));
      const auto single = run(*alone, {wavs_[i]}, {7777});
      EXPECT_EQ(tokens_string(single[0].tokens), tokens_string(references[i].tokens));
    }
    if (!timestamps) {
      // Beam search finds other tokens than greedy somewhere, or the test shows nothing.
      bool differs = false;
      for (std::size_t i = 0; i < wavs_.size(); ++i)
        differs |= references[i].tokens != references_[i].tokens;
      EXPECT_TRUE(differs) << "beam 3 chose greedy's tokens on every clip";
    }
  }
}

// `voxrt transcribe --json --timestamps --decoder beam --beam 3`: the language and the segments
// in the JSON line, the reference's text.
TEST_F(WhisperTest, TranscribeProgramWritesLanguageAndSegments) {
  const char* cli = std::getenv("VOXRT_CLI");
  if (cli == nullptr) GTEST_SKIP() << "VOXRT_CLI (the voxrt program) is not set";
  const auto references = run_reference(export_dir_, {wavs_[1]}, "--beam 3 --timestamps");
  ASSERT_EQ(references.size(), 1u);
  const std::string cmd = std::string("'") + cli + "' transcribe --json --timestamps --decoder " +
                          "beam --beam 3 --engine '" + bundle_.string() + "' --vad off '" +
                          wavs_[1] + "' 2>/dev/null";
  std::istringstream lines(run_capture(cmd));
  int finals = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << cmd << ": " << line;
    if (!j.value("is_final", false)) continue;
    ++finals;
    EXPECT_EQ(j["text"].get<std::string>(), references[0].text);
    EXPECT_EQ(j.value("language", ""), references[0].language);
    std::vector<Segment> segments;
    for (const auto& s : j.value("segments", nlohmann::json::array()))
      segments.push_back(
          {s["text"].get<std::string>(), s["start"].get<double>(), s["end"].get<double>()});
    EXPECT_EQ(segments_string(segments), segments_string(references[0].segments));
  }
  EXPECT_EQ(finals, 1) << cmd;
}

// A copy of the export with one change, imported: the error must name `file` and `key`.
void expect_import_error(const std::function<void(const fs::path&)>& change,
                         const std::vector<std::string>& expected_in_message) {
  static int n = 0;
  const fs::path dir = work_dir() / ("broken_" + std::to_string(n++));
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(work_dir() / "export")) {
    if (entry.path().extension() == ".json" || entry.path().filename() == "encoder_model.onnx" ||
        entry.path().filename().string().starts_with("decoder"))
      fs::copy_file(entry.path(), dir / entry.path().filename());
  }
  change(dir);
  model_import::ModelDirImportOptions options;
  options.model_dir = dir.string();
  options.bundle_dir = (dir / "bundle").string();
  options.build.autotune = false;
  auto imported = model_import::import_model_dir(options);
  ASSERT_FALSE(imported.has_value()) << "imported " << dir;
  for (const std::string& part : expected_in_message) {
    EXPECT_NE(imported.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << imported.status().message();
  }
}

void edit_json(const fs::path& path, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j;
  std::ifstream(path) >> j;
  edit(j);
  std::ofstream(path) << j.dump();
}

// Conditioning on previous text (on by default, as OpenAI's): the long clip's later windows
// start their prompt with <|startofprev|> and the tokens before (the reference's prompts); with it
// off, and with an initial prompt (BPE-encoded by each side's own encoder), the engine gives the
// reference's tokens, batched and alone, and each choice changes what is said (greedy here;
// BeamSearchGivesTheReferenceTokens runs the beam search conditioned, the default).
TEST_F(WhisperTest, ConditionsOnPreviousTextAsOpenAIDoes) {
  const int sot_prev = 275;  // <|startofprev|> in optimum_whisper.py's vocabulary
  ASSERT_GE(references_[1].prompts.size(), 2u);
  EXPECT_EQ(references_[1].prompts[0].front(), 269);  // <|startoftranscript|>: nothing before
  EXPECT_EQ(references_[1].prompts[1].front(), sot_prev);
  stream::EncoderDecoderOptions off;
  off.condition_on_previous_text = false;
  const auto unconditioned = run_reference(export_dir_, wavs_, "--no-condition");
  ASSERT_EQ(unconditioned.size(), wavs_.size());
  for (const auto& prompt : unconditioned[1].prompts) EXPECT_NE(prompt.front(), sot_prev);
  EXPECT_NE(tokens_string(unconditioned[1].tokens), tokens_string(references_[1].tokens));
  expect_reference(make_with(off), unconditioned);

  stream::EncoderDecoderOptions prompted;
  prompted.initial_prompt = "  hello world, the speech ";
  const auto with_prompt =
      run_reference(export_dir_, wavs_, "--initial-prompt '" + prompted.initial_prompt + "'");
  ASSERT_EQ(with_prompt.size(), wavs_.size());
  ASSERT_FALSE(with_prompt[0].prompts.empty());
  EXPECT_EQ(with_prompt[0].prompts[0].front(), sot_prev);
  EXPECT_NE(tokens_string(with_prompt[0].tokens), tokens_string(references_[0].tokens));
  expect_reference(make_with(prompted), with_prompt);
}

// Temperature fallback with OpenAI's temperatures and a log-probability threshold between what
// the clips' windows score (the random model is unsure everywhere): some windows keep their
// greedy result, others fall back to sampling; the engine draws the reference's tokens (the same
// counter-based draws), batched and alone, and another seed draws others.
TEST_F(WhisperTest, TemperatureFallbackSamplesAsTheReference) {
  stream::EncoderDecoderOptions options;
  options.fallback.temperatures = stream::TemperatureFallbackConfig::openai_temperatures();
  options.fallback.logprob_threshold = -5.175;
  options.fallback.seed = 7;
  const auto references =
      run_reference(export_dir_, wavs_,
                    "--temperatures 0,0.2,0.4,0.6,0.8,1.0 --logprob-threshold -5.175 --seed 7");
  ASSERT_EQ(references.size(), wavs_.size());
  int greedy = 0;
  int sampled = 0;
  for (const auto& r : references) {
    for (double t : r.temperatures) (t > 0.0 ? sampled : greedy) += 1;
  }
  EXPECT_GE(greedy, 1);
  EXPECT_GE(sampled, 1);
  auto recognizer = make_with(options);
  expect_reference(recognizer, references);
  options.fallback.seed = 8;
  const auto other_seed = run(*make_with(options), {wavs_[1]}, {8000});
  EXPECT_NE(tokens_string(other_seed[0].tokens), tokens_string(references[1].tokens));
  // Fallback off (the default): the greedy result whatever its score.
  EXPECT_EQ(run(*make_with({}), {wavs_[1]}, {8000})[0].text, references_[1].text);
}

// A stream's own prompt and temperatures (StreamOptions::whisper, what the server's requests
// set) over the recognizer's: three streams in one batch, one with an initial prompt, one with
// the fallback from 0, one sampled at 0.4 only, each give the reference's tokens with those
// options, batched and alone, and other tokens than without them; a temperature out of 0..1 is
// refused with the range and the value.
TEST_F(WhisperTest, StreamsTakeTheirOwnPromptAndTemperatures) {
  stream::EncoderDecoderOptions options;
  options.fallback.logprob_threshold = -5.175;
  options.fallback.seed = 7;
  auto recognizer = make_with(options);
  ASSERT_TRUE(recognizer);
  const std::string common = "--logprob-threshold -5.175 --seed 7 ";
  std::vector<stream::StreamOptions> streams(3);
  streams[0].whisper.initial_prompt = "hello world";
  streams[1].whisper.temperature_fallback = true;
  streams[2].whisper.temperature = 0.4;
  const std::vector<std::string> reference_options = {
      common + "--initial-prompt 'hello world'", common + "--temperatures 0,0.2,0.4,0.6,0.8,1.0",
      common + "--temperatures 0.4"};
  std::vector<std::vector<int>> together(3), plain(3);
  model_test::feed_files_as_streams(*recognizer, wavs_, {3200, 4000, 16000}, streams,
                                    [&](std::size_t i, const stream::StreamResult& result) {
                                      if (!result.result.is_final) return;
                                      for (const auto& t : result.result.tokens)
                                        together[i].push_back(t.id);
                                    });
  model_test::feed_files_as_streams(*recognizer, wavs_, {3200, 4000, 16000}, {},
                                    [&](std::size_t i, const stream::StreamResult& result) {
                                      if (!result.result.is_final) return;
                                      for (const auto& t : result.result.tokens)
                                        plain[i].push_back(t.id);
                                    });
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(reference_options[i]);
    const auto reference = run_reference(export_dir_, {wavs_[i]}, reference_options[i]);
    ASSERT_EQ(reference.size(), 1u);
    EXPECT_EQ(tokens_string(together[i]), tokens_string(reference[0].tokens));
    EXPECT_NE(tokens_string(together[i]), tokens_string(plain[i]));
    std::vector<int> alone;
    model_test::feed_files_as_streams(*recognizer, {wavs_[i]}, {8000}, {streams[i]},
                                      [&](std::size_t, const stream::StreamResult& result) {
                                        if (!result.result.is_final) return;
                                        for (const auto& t : result.result.tokens)
                                          alone.push_back(t.id);
                                      });
    EXPECT_EQ(tokens_string(alone), tokens_string(reference[0].tokens));
  }
  stream::StreamOptions hot;
  hot.whisper.temperature = 1.5;
  const auto refused = recognizer->open_stream(hot);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("temperature must be a number from 0 to 1, found 1.5"),
            std::string::npos)
      << refused.status().message();
}

// Growing-window partials (RecognizerConfig::partial_interval_ms): while a 30 s window fills,
// its audio so far is decoded again every 2 s for the partial result, so partials come every few
// seconds instead of once per window; the final is still the offline decode of the same audio
// (the reference's tokens and text), for a stream batched with another and alone.
TEST_F(WhisperTest, GrowingWindowPartialsKeepTheOfflineFinal) {
  auto make_partials = [](int interval_ms) {
    stream::RecognizerConfig config;
    config.engine_path = bundle_.string();
    config.vad = stream::VadKind::kOff;
    config.max_batch = 4;
    config.max_streams = 8;
    config.partial_interval_ms = interval_ms;
    auto r = stream::Recognizer::create(config);
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : nullptr;
  };
  auto growing = make_partials(2000);
  ASSERT_TRUE(growing);
  const auto together = run(*growing, {wavs_[1], wavs_[0]}, {3200, 1600});
  EXPECT_EQ(tokens_string(together[0].tokens), tokens_string(references_[1].tokens));
  EXPECT_EQ(together[0].text, references_[1].text);
  EXPECT_EQ(tokens_string(together[1].tokens), tokens_string(references_[0].tokens));
  const auto alone = run(*growing, {wavs_[1]}, {8000});
  EXPECT_EQ(tokens_string(alone[0].tokens), tokens_string(references_[1].tokens));
  // 68 s in three windows: without the interval a partial comes only when a window is complete
  // (at most 3); with it, from partial decodes every 2 s (a partial is sent when its text
  // changes).
  auto whole_windows = make_partials(0);
  ASSERT_TRUE(whole_windows);
  const auto per_window = run(*whole_windows, {wavs_[1]}, {3200});
  EXPECT_LE(per_window[0].partials.size(), 3u);
  EXPECT_EQ(tokens_string(per_window[0].tokens), tokens_string(references_[1].tokens));
  std::cout << "partials of the 68 s clip: " << together[0].partials.size() << " growing, "
            << per_window[0].partials.size() << " per whole window\n";
  EXPECT_GE(together[0].partials.size(), 5u);
}

// Beam search, timestamps, previous text and the fallback together: windows whose beam result
// is unsure are sampled at 0.2 under the timestamp rules (and, below 0.5, still condition the
// next window); tokens, text and segments are the reference's, batched and alone.
TEST_F(WhisperTest, BeamTimestampsAndFallbackTogether) {
  stream::EncoderDecoderOptions options;
  options.fallback.temperatures = stream::TemperatureFallbackConfig::openai_temperatures();
  options.fallback.logprob_threshold = -4.65;
  options.fallback.seed = 7;
  const auto references = run_reference(export_dir_, wavs_,
                                        "--beam 3 --timestamps --temperatures "
                                        "0,0.2,0.4,0.6,0.8,1.0 --logprob-threshold -4.65 --seed 7");
  ASSERT_EQ(references.size(), wavs_.size());
  int beam = 0;
  int sampled = 0;
  for (const auto& r : references) {
    for (double t : r.temperatures) (t > 0.0 ? sampled : beam) += 1;
  }
  EXPECT_GE(beam, 1);
  EXPECT_GE(sampled, 1);
  stream::RecognizerConfig config;
  config.engine_path = bundle_.string();
  config.vad = stream::VadKind::kOff;
  config.decoder = stream::DecoderKind::kBeam;
  config.decoding.beam_width = 3;
  config.decoding.timestamps = true;
  config.encoder_decoder = options;
  config.max_batch = 4;
  config.max_streams = 8;
  auto r = stream::Recognizer::create(config);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  const auto together = run(**r, wavs_, {3200, 4000, 16000});
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    SCOPED_TRACE(wavs_[i]);
    EXPECT_EQ(tokens_string(together[i].tokens), tokens_string(references[i].tokens));
    EXPECT_EQ(together[i].text, references[i].text);
    EXPECT_EQ(segments_string(together[i].segments), segments_string(references[i].segments));
    const auto alone = run(**r, {wavs_[i]}, {8000});
    EXPECT_EQ(tokens_string(alone[0].tokens), tokens_string(references[i].tokens));
  }
}

// --task translate puts <|translate|> in the prompt: the reference's tokens, batched and alone;
// a model without <|translate|> refuses it with a message that says so.
TEST_F(WhisperTest, TranslateTaskUsesTheTranslateToken) {
  const auto references = run_reference(export_dir_, wavs_, "--task translate");
  ASSERT_EQ(references.size(), wavs_.size());
  ASSERT_FALSE(references[0].prompts.empty());
  EXPECT_EQ(references[0].prompts[0][2], 272);  // <|translate|>
  // (The tiny model's tokens follow the positions and the audio, not the prompt's tokens: the
  // task changes its log-probabilities only past the fourth decimal and no token on these clips,
  // so this shows the engine and the reference agree under translate; WindowPrompt's unit test
  // shows the token is the prompt's.)
  stream::EncoderDecoderOptions translate;
  translate.task = stream::WhisperTask::kTranslate;
  expect_reference(make_with(translate), references);

  const fs::path bundle = work_dir() / "bundle_no_translate";
  fs::remove_all(bundle);
  fs::copy(bundle_, bundle, fs::copy_options::recursive);
  auto manifest = stream::BundleManifest::read(bundle.string());
  ASSERT_TRUE(manifest.has_value()) << manifest.status().to_string();
  ASSERT_EQ(manifest->metadata.erase("voxrt.encoder_decoder.translate_id"), 1u);
  ASSERT_TRUE(manifest->write(bundle.string()).is_ok());
  stream::RecognizerConfig config;
  config.engine_path = bundle.string();
  config.encoder_decoder = translate;
  auto refused = stream::Recognizer::create(config);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("translate"), std::string::npos)
      << refused.status().to_string();
}

TEST_F(WhisperTest, ImportErrorsNameTheFileAndKey) {
  expect_import_error([](const fs::path& d) { fs::remove(d / "generation_config.json"); },
                      {"generation_config.json", "missing"});
  expect_import_error([](const fs::path& d) { fs::remove(d / "vocab.json"); }, {"vocab.json"});
  expect_import_error([](const fs::path& d) { fs::remove(d / "decoder_with_past_model.onnx"); },
                      {"decoder_with_past_model.onnx"});
  expect_import_error(
      [](const fs::path& d) {
        edit_json(d / "generation_config.json",
                  [](nlohmann::json& j) { j.erase("no_timestamps_token_id"); });
      },
      {"generation_config.json", "no_timestamps_token_id"});
  expect_import_error(
      [](const fs::path& d) {
        edit_json(d / "config.json", [](nlohmann::json& j) { j["d_model"] = "wide"; });
      },
      {"config.json", "d_model", "\"wide\""});
  expect_import_error(
      [](const fs::path& d) {
        edit_json(d / "generation_config.json", [](nlohmann::json& j) {
          j["suppress_tokens"] = {1, 99999};
        });
      },
      {"generation_config.json", "suppress_tokens", "99999"});
  expect_import_error(
      [](const fs::path& d) {
        edit_json(d / "generation_config.json",
                  [](nlohmann::json& j) { j["lang_to_id"]["<|xx|>"] = 99999; });
      },
      {"generation_config.json", "lang_to_id", "<|xx|>", "99999"});
  expect_import_error(
      [](const fs::path& d) {
        fs::rename(d / "decoder_model.onnx", d / "decoder_model_merged.onnx");
        fs::remove(d / "decoder_with_past_model.onnx");
      },
      {"decoder_model_merged.onnx", "not imported"});
}

// The family itself: three streams' windows in one run_batch go through one encoder call, one
// decoder call and at most max_target_positions - prompt decoder_with_past calls, and each
// stream's text equals its window decoded alone.
TEST_F(WhisperTest, OneEncoderCallPerBatchOfWindows) {
  stream::RecognizerConfig config;
  config.engine_path = bundle_.string();
  config.max_batch = 4;
  auto loaded = stream::load_model_family(config);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  auto* model = dynamic_cast<stream::EncoderDecoderModel*>(loaded->get());
  ASSERT_NE(model, nullptr);
  // Three windows of the clips' log-mel frames: the short clip's, the long clip's first and
  // third.
  std::vector<std::vector<float>> windows;
  for (const auto& [wav, window] : {std::pair{0, 0}, std::pair{1, 0}, std::pair{1, 2}}) {
    auto clip = audio::read_audio_file(wavs_[static_cast<std::size_t>(wav)]);
    ASSERT_TRUE(clip.has_value());
    auto frames = audio::compute_features(model->feature_config(), clip->samples);
    ASSERT_TRUE(frames.has_value());
    frames->resize(3 * 3000 * 80, audio::kWhisperSilenceLogMel);
    windows.emplace_back(frames->begin() + window * 3000 * 80,
                         frames->begin() + (window + 1) * 3000 * 80);
  }
  const stream::ResolvedDecoding greedy;
  auto decode = [&](const std::vector<std::size_t>& which) {
    std::vector<std::unique_ptr<stream::FamilyStream>> streams;
    std::vector<stream::ChunkInput> batch;
    for (std::size_t i : which) {
      auto s = model->open_stream(stream::StreamOptions{}, greedy);
      EXPECT_TRUE(s.has_value()) << s.status().to_string();
      streams.push_back(std::move(*s));
      // The third window holds 802 frames with audio (68 s: 6802 frames touch it).
      batch.push_back({streams.back().get(), windows[i].data(), i == 2 ? 802 : 3000});
    }
    EXPECT_TRUE(model->run_batch(batch, 3000).is_ok());
    std::vector<std::string> texts;
    for (auto& s : streams)
      texts.push_back(tokens_string([&] {
        std::vector<int> ids;
        for (const auto& t : s->finalize().tokens) ids.push_back(t.id);
        return ids;
      }()));
    return texts;
  };
  const auto before = model->calls();
  const auto together = decode({0, 1, 2});
  const auto after = model->calls();
  EXPECT_EQ(after.encoder - before.encoder, 1);
  EXPECT_EQ(after.decoder - before.decoder, 1);
  // The three fresh streams' languages: one decoder call on <|startoftranscript|>.
  EXPECT_EQ(after.language_detection - before.language_detection, 1);
  EXPECT_LE(after.decoder_with_past - before.decoder_with_past, 32 - 4);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(together[i].empty()) << "window " << i << " said nothing";
    EXPECT_EQ(together[i], decode({i})[0]) << "window " << i;
  }
  EXPECT_NE(together[0], together[1]);
}

// The fallback's attempts are batched too: the windows that fail at one temperature share one
// prompt call at the next (three fresh streams: one prompt length), and each window's tokens are
// those it gets decoded alone.
TEST_F(WhisperTest, FallbackAttemptsShareDecoderCalls) {
  stream::RecognizerConfig config;
  config.engine_path = bundle_.string();
  config.max_batch = 4;
  config.encoder_decoder.fallback.temperatures =
      stream::TemperatureFallbackConfig::openai_temperatures();
  config.encoder_decoder.fallback.logprob_threshold = -5.175;
  auto loaded = stream::load_model_family(config);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  auto* model = dynamic_cast<stream::EncoderDecoderModel*>(loaded->get());
  ASSERT_NE(model, nullptr);
  std::vector<std::vector<float>> windows;
  for (const auto& [wav, window] : {std::pair{0, 0}, std::pair{1, 0}, std::pair{1, 1}}) {
    auto clip = audio::read_audio_file(wavs_[static_cast<std::size_t>(wav)]);
    ASSERT_TRUE(clip.has_value());
    auto frames = audio::compute_features(model->feature_config(), clip->samples);
    ASSERT_TRUE(frames.has_value());
    frames->resize(3 * 3000 * 80, audio::kWhisperSilenceLogMel);
    windows.emplace_back(frames->begin() + window * 3000 * 80,
                         frames->begin() + (window + 1) * 3000 * 80);
  }
  auto decode = [&](const std::vector<std::size_t>& which) {
    std::vector<std::unique_ptr<stream::FamilyStream>> streams;
    std::vector<stream::ChunkInput> batch;
    for (std::size_t i : which) {
      auto s = model->open_stream(stream::StreamOptions{}, stream::ResolvedDecoding{});
      EXPECT_TRUE(s.has_value()) << s.status().to_string();
      streams.push_back(std::move(*s));
      batch.push_back({streams.back().get(), windows[i].data(), 3000});
    }
    EXPECT_TRUE(model->run_batch(batch, 3000).is_ok());
    std::vector<std::string> texts;
    for (auto& s : streams) texts.push_back(s->finalize().text);
    return texts;
  };
  const auto before = model->calls();
  const auto together = decode({0, 1, 2});
  const auto after = model->calls();
  const long long rounds = after.decoder - before.decoder;
  const long long again = after.fallback_decodings - before.fallback_decodings;
  EXPECT_EQ(after.encoder - before.encoder, 1);
  // At least one window fell back (the long clip's first scores -5.181 greedily), and each
  // round after the first decoded one to three windows in its one prompt call.
  EXPECT_GE(rounds, 2);
  EXPECT_LE(rounds, 6);
  EXPECT_GE(again, rounds - 1);
  EXPECT_LE(again, 3 * (rounds - 1));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(together[i], decode({i})[0]) << "window " << i;
}

// The special tokens from tokenizer.json's added_tokens instead of added_tokens.json: the same
// bundle contract, the same text.
TEST_F(WhisperTest, ImportsTokenizerJsonInsteadOfAddedTokens) {
  const fs::path dir = work_dir() / "tokenizer_json";
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(export_dir_)) {
    if (entry.path().filename() != "added_tokens.json" && entry.path().extension() != ".pt")
      fs::copy_file(entry.path(), dir / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
  }
  nlohmann::json added;
  std::ifstream(export_dir_ / "added_tokens.json") >> added;
  nlohmann::json tokenizer = {{"version", "1.0"}, {"added_tokens", nlohmann::json::array()}};
  for (const auto& [content, id] : added.items())
    tokenizer["added_tokens"].push_back({{"id", id}, {"content", content}, {"special", true}});
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
  model_import::ModelDirImportOptions options;
  options.model_dir = dir.string();
  options.bundle_dir = (dir / "bundle").string();
  options.build.autotune = false;
  options.build.device = test_device();
  options.max_batch = 2;
  auto imported = model_import::import_model_dir(options);
  ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
  auto manifest = stream::BundleManifest::read(options.bundle_dir);
  ASSERT_TRUE(manifest.has_value());
  auto reference_manifest = stream::BundleManifest::read(bundle_.string());
  ASSERT_TRUE(reference_manifest.has_value());
  EXPECT_EQ(manifest->metadata.at("voxrt.encoder_decoder.added_tokens_file"), "tokenizer.json");
  for (const char* key :
       {"voxrt.encoder_decoder.sot_id", "voxrt.encoder_decoder.task_id",
        "voxrt.encoder_decoder.no_timestamps_id", "voxrt.encoder_decoder.timestamp_begin_id",
        "voxrt.encoder_decoder.languages", "voxrt.encoder_decoder.eos_id",
        "voxrt.encoder_decoder.no_speech_id"}) {
    EXPECT_EQ(manifest->metadata.at(key), reference_manifest->metadata.at(key)) << key;
  }
  stream::RecognizerConfig config;
  config.engine_path = options.bundle_dir;
  config.vad = stream::VadKind::kOff;
  auto r = stream::Recognizer::create(config);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(run(**r, {wavs_[0]}, {1600})[0].text, references_[0].text);
}

// ---- the window rules alone (window_search.h), on hand-made logits ----

stream::EncoderDecoderContract small_contract() {
  stream::EncoderDecoderContract c;
  c.vocab_size = 10;
  c.decoder_layers = 1;
  c.max_target_positions = 12;
  c.sot_id = 7;
  c.no_timestamps_id = 8;
  c.eos_id = 9;
  c.no_speech_id = 6;
  c.suppress_tokens = {1};
  c.begin_suppress_tokens = {2, 9};
  return c;
}

// Logits favouring `best`, then `second`.
std::vector<float> logits_for(int best, int second = -1) {
  std::vector<float> l(10, 0.0f);
  l[static_cast<std::size_t>(best)] = 5.0f;
  if (second >= 0) l[static_cast<std::size_t>(second)] = 4.0f;
  return l;
}

std::shared_ptr<const stream::WindowRules> rules(const stream::EncoderDecoderContract& c) {
  // 6, 7 and 8 are special (9 = eos is special too, but end-of-text stays choosable).
  const std::vector<std::uint8_t> special = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  return std::make_shared<const stream::WindowRules>(stream::WindowRules::create(c, special));
}

TEST(WindowSearch, SuppressesAndStopsAtEndOfText) {
  stream::WindowSearch search(
      rules(small_contract()),
      stream::window_prompt(small_contract(), -1, stream::WhisperTask::kTranscribe, false, {}));
  EXPECT_EQ(search.last_token(), 8);  // the prompt's last
  EXPECT_EQ(search.past_length(), 1);
  auto l = logits_for(2, 3);  // 2 is begin-suppressed: 3 wins
  EXPECT_TRUE(search.accept_logits(l.data()));
  l = logits_for(2, 3);  // now 2 may come
  EXPECT_TRUE(search.accept_logits(l.data()));
  l = logits_for(1, 4);  // 1 is always suppressed
  EXPECT_TRUE(search.accept_logits(l.data()));
  l = logits_for(6, 5);  // a special token never wins
  EXPECT_TRUE(search.accept_logits(l.data()));
  EXPECT_EQ(search.past_length(), 5);
  l = logits_for(9);
  EXPECT_FALSE(search.accept_logits(l.data()));
  EXPECT_TRUE(search.done());
  EXPECT_EQ(search.text_tokens(), (std::vector<int>{3, 2, 4, 5}));
}

TEST(WindowSearch, StopsAtMaxTargetPositions) {
  stream::WindowSearch search(
      rules(small_contract()),
      stream::window_prompt(small_contract(), -1, stream::WhisperTask::kTranscribe, false, {}));
  int chosen = 0;
  for (int step = 0; step < 20; ++step) {
    auto l = logits_for(3 + step % 3);  // 3 4 5 3 4 5 ...: a 3-gram, but only 3 copies fit
    ++chosen;
    if (!search.accept_logits(l.data())) break;
  }
  // prompt 2 + 10 tokens = max_target_positions 12.
  EXPECT_EQ(search.text_tokens().size(), 10u);
  EXPECT_EQ(chosen, 10);
}

TEST(WindowSearch, RepetitionGuardKeepsOneCopy) {
  auto c = small_contract();
  c.max_target_positions = 40;
  stream::WindowSearch search(
      rules(c), stream::window_prompt(c, -1, stream::WhisperTask::kTranscribe, false, {}));
  const std::vector<int> said = {0, 3, 4, 3, 4, 3, 4, 3, 4, 5};
  std::size_t step = 0;
  for (; step < said.size(); ++step) {
    auto l = logits_for(said[step]);
    if (!search.accept_logits(l.data())) break;
  }
  EXPECT_EQ(step, 8u);  // the 4th copy of "3 4" ends the window
  EXPECT_EQ(search.text_tokens(), (std::vector<int>{0, 3, 4}));
}

TEST(WindowSearch, NoSpeechNeedsHighProbabilityAndLowConfidence) {
  auto silent = [](float no_speech_logit, float margin) {
    stream::WindowSearch search(
        rules(small_contract()),
        stream::window_prompt(small_contract(), -1, stream::WhisperTask::kTranscribe, false, {}));
    std::vector<float> first(10, 0.0f);
    first[6] = no_speech_logit;
    search.observe_first_position(first.data());
    std::vector<float> l(10, 0.0f);
    l[3] = margin;  // a confident or an unsure first token
    search.accept_logits(l.data());
    l.assign(10, 0.0f);
    l[9] = 0.5f;  // end-of-text, barely: log P ~ -1.4
    search.accept_logits(l.data());
    return search.is_silence();
  };
  EXPECT_TRUE(silent(10.0f, 0.0f));    // P(no_speech) ~1, tokens unsure
  EXPECT_FALSE(silent(10.0f, 20.0f));  // the tokens are confident: speech after all
  EXPECT_FALSE(silent(-10.0f, 0.0f));  // no_speech unlikely
}

// ---- the contract's prompt keys (encoder_decoder_contract.h) ----

TEST(EncoderDecoderContract, PromptKeysRoundTripAndOldBundlesStillLoad) {
  auto c = small_contract();
  c.vocab_size = 20;
  c.max_target_positions = 12;
  c.languages = {{"en", 10}, {"de", 11}};
  c.task_id = 12;
  c.timestamp_begin_id = 14;
  c.translate_id = 13;
  c.sot_prev_id = 15;
  c.merges_file = "merges.txt";
  auto read = stream::EncoderDecoderContract::from_metadata(c.to_metadata(), "test");
  ASSERT_TRUE(read.has_value()) << read.status().to_string();
  EXPECT_EQ(read->translate_id, 13);
  EXPECT_EQ(read->sot_prev_id, 15);
  EXPECT_EQ(read->merges_file, "merges.txt");
  EXPECT_EQ(read->max_previous_tokens(), 5);
  c.translate_id = -1;
  c.sot_prev_id = -1;
  read = stream::EncoderDecoderContract::from_metadata(c.to_metadata(), "test");
  ASSERT_TRUE(read.has_value()) << read.status().to_string();
  EXPECT_EQ(read->language_id, -1);  // detected per stream
  EXPECT_EQ(read->language_code(11), "de");
  EXPECT_EQ(read->timestamp_begin_id, 14);
  EXPECT_EQ(stream::window_prompt(*read, 11, stream::WhisperTask::kTranscribe, false, {}),
            (std::vector<int>{7, 11, 12, 8}));
  EXPECT_EQ(stream::window_prompt(*read, 10, stream::WhisperTask::kTranscribe, true, {}),
            (std::vector<int>{7, 10, 12}));
  c.language_id = 10;
  read = stream::EncoderDecoderContract::from_metadata(c.to_metadata(), "test");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->language_id, 10);
  // English-only: no language, no task.
  auto english = small_contract();
  read = stream::EncoderDecoderContract::from_metadata(english.to_metadata(), "test");
  ASSERT_TRUE(read.has_value());
  EXPECT_FALSE(read->multilingual());
  EXPECT_EQ(stream::window_prompt(*read, -1, stream::WhisperTask::kTranscribe, false, {}),
            (std::vector<int>{7, 8}));
  // A bundle written before these keys: `prompt` alone, a fixed language without timestamps.
  auto old = english.to_metadata();
  for (const char* key : {"sot_id", "no_timestamps_id"})
    old.erase(std::string("voxrt.encoder_decoder.") + key);
  old["voxrt.encoder_decoder.prompt"] = "7,5,4,8";
  read = stream::EncoderDecoderContract::from_metadata(old, "test");
  ASSERT_TRUE(read.has_value()) << read.status().to_string();
  EXPECT_EQ(
      stream::window_prompt(*read, read->language_id, stream::WhisperTask::kTranscribe, false, {}),
      (std::vector<int>{7, 5, 4, 8}));
  EXPECT_EQ(read->timestamp_begin_id, -1);
  // Errors name the key and what was found.
  auto bad = c.to_metadata();
  bad["voxrt.encoder_decoder.languages"] = "en:10,de";
  read = stream::EncoderDecoderContract::from_metadata(bad, "bundle.json");
  ASSERT_FALSE(read.has_value());
  EXPECT_NE(read.status().message().find("voxrt.encoder_decoder.languages"), std::string::npos);
  EXPECT_NE(read.status().message().find("'de'"), std::string::npos) << read.status().message();
  bad = c.to_metadata();
  bad["voxrt.encoder_decoder.language_id"] = "13";
  read = stream::EncoderDecoderContract::from_metadata(bad, "bundle.json");
  ASSERT_FALSE(read.has_value());
  EXPECT_NE(read.status().message().find("none of the languages"), std::string::npos)
      << read.status().message();
}

// ---- the timestamp rules and segments alone (timestamp_rules.h) ----

// Text 0..5, end-of-text 6, a special 7, timestamps 8.. (<|0.00|> = 8): 0.02 s apart, 61 of them.
constexpr int kTextEnd = 6;
constexpr int kTs = 8;
constexpr int kTsVocab = kTs + 61;

std::vector<bool> allowed_after(const std::vector<int>& sampled, std::vector<float> logits = {}) {
  const stream::TimestampRules rules(kTs, kTextEnd, kTsVocab);
  if (logits.empty()) logits.assign(kTsVocab, 0.0f);
  rules.apply(sampled, logits.data());
  std::vector<bool> allowed;
  for (float l : logits) allowed.push_back(std::isfinite(l));
  return allowed;
}

TEST(TimestampRules, FirstTokenIsAnEarlyTimestamp) {
  const auto allowed = allowed_after({});
  for (int id = 0; id < kTs; ++id) EXPECT_FALSE(allowed[id]) << id;  // text and end-of-text
  EXPECT_TRUE(allowed[kTs]);
  EXPECT_TRUE(allowed[kTs + 50]);   // 1.00 s: the latest first timestamp
  EXPECT_FALSE(allowed[kTs + 51]);  // 1.02 s
}

TEST(TimestampRules, TimestampsComeInPairsAndNeverGoBack) {
  // After the first timestamp (counted as a pair): text or end-of-text, no timestamp. (Text
  // and end-of-text are made likelier than all timestamps together so the sum rule stays out of
  // the way: end-of-text counts as text there.)
  std::vector<float> text_likely(kTsVocab, -10.0f);
  for (int id = 0; id <= kTextEnd; ++id) text_likely[static_cast<std::size_t>(id)] = 5.0f;
  auto allowed = allowed_after({kTs + 3}, text_likely);
  EXPECT_TRUE(allowed[0]);
  EXPECT_TRUE(allowed[kTextEnd]);
  EXPECT_FALSE(allowed[kTs + 10]);
  // After text: more text, or a timestamp after the last one (a segment is never empty).
  allowed = allowed_after({kTs + 3, 1}, text_likely);
  EXPECT_TRUE(allowed[2]);
  EXPECT_FALSE(allowed[kTs + 3]);
  EXPECT_TRUE(allowed[kTs + 4]);
  // After a segment's end (a lone timestamp): the next start (it may repeat the end) or
  // end-of-text, no text.
  allowed = allowed_after({kTs + 3, 1, kTs + 20}, text_likely);
  EXPECT_FALSE(allowed[1]);
  EXPECT_TRUE(allowed[kTextEnd]);
  EXPECT_FALSE(allowed[kTs + 19]);
  EXPECT_TRUE(allowed[kTs + 20]);
  // After a pair: text again.
  allowed = allowed_after({kTs + 3, 1, kTs + 20, kTs + 20}, text_likely);
  EXPECT_TRUE(allowed[1]);
  EXPECT_FALSE(allowed[kTs + 21]);
}

TEST(TimestampRules, TimestampsWinWhenTogetherLikelierThanTheBestText) {
  // One text token at logit 2 (e^2 = 7.4) against 40 allowed timestamps at 0 (sum 40).
  std::vector<float> logits(kTsVocab, -100.0f);
  logits[2] = 2.0f;
  for (int id = kTs + 11; id < kTs + 51; ++id) logits[static_cast<std::size_t>(id)] = 0.0f;
  auto allowed = allowed_after({kTs + 3, 1}, logits);
  EXPECT_FALSE(allowed[2]);
  EXPECT_TRUE(allowed[kTs + 11]);
  // At logit 4 (e^4 = 54.6) the text token stays.
  logits[2] = 4.0f;
  allowed = allowed_after({kTs + 3, 1}, logits);
  EXPECT_TRUE(allowed[2]);
}

std::string segments_of(const std::vector<int>& tokens, double window_s) {
  const stream::TimestampRules rules(kTs, kTextEnd, kTsVocab);
  std::string out;
  char line[96];
  for (const auto& s : stream::split_segments(tokens, rules, window_s)) {
    std::snprintf(line, sizeof(line), "[%d,%d) %.2f-%.2f;", s.first_token, s.end_token, s.start_s,
                  s.end_s);
    out += line;
  }
  return out;
}

TEST(TimestampRules, SegmentsAsOpenAICutsThem) {
  // Two segments, the window ending on a lone timestamp.
  EXPECT_EQ(segments_of({kTs, 1, 2, kTs + 50, kTs + 50, 3, kTs + 60}, 30.0),
            "[0,4) 0.00-1.00;[4,7) 1.00-1.20;");
  // The window ends mid-segment: that segment runs to the window's end.
  EXPECT_EQ(segments_of({kTs, 1, kTs + 50, kTs + 55, 3}, 12.5),
            "[0,3) 0.00-1.00;[3,5) 1.10-12.50;");
  // No pair: one segment to the last timestamp, or to the window's end.
  EXPECT_EQ(segments_of({kTs, 1, kTs + 40}, 30.0), "[0,3) 0.00-0.80;");
  EXPECT_EQ(segments_of({kTs, 1, 2}, 30.0), "[0,3) 0.00-30.00;");
  EXPECT_EQ(segments_of({kTs + 2, 1, 2}, 30.0), "[0,3) 0.00-0.04;");  // OpenAI's rule, odd as it is
  EXPECT_EQ(segments_of({}, 30.0), "");
}

// ---- the beam search alone (beam_search.h), on hand-made logits ----

// Vocabulary 10, end-of-text 9: after the prompt 3 (logit 2.0) is a little likelier than 4
// (1.9); after 3 every token is unsure, after 4 token 5 is sure; then end-of-text.
std::vector<float> beam_logits(const std::vector<int>& prefix) {
  std::vector<float> l(10, 0.0f);
  if (prefix.empty()) {
    l[3] = 2.0f;
    l[4] = 1.9f;
  } else if (prefix.size() == 1) {
    if (prefix[0] == 4) l[5] = 10.0f;
  } else {
    l[9] = 10.0f;
  }
  return l;
}

std::vector<int> run_search(stream::WindowDecoding& search) {
  std::vector<std::vector<int>> prefixes = {{}};
  std::vector<int> sources;
  for (int step = 0; step < 10 && !prefixes.empty(); ++step) {
    std::vector<float> logits;
    for (const auto& p : prefixes) {
      const auto l = beam_logits(p);
      logits.insert(logits.end(), l.begin(), l.end());
    }
    search.advance(logits.data(), sources);
    std::vector<std::vector<int>> next;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      next.push_back(prefixes[static_cast<std::size_t>(sources[i])]);
      next.back().push_back(search.next_token(static_cast<int>(i)));
    }
    prefixes = std::move(next);
    EXPECT_EQ(static_cast<int>(prefixes.size()), search.live_rows());
  }
  EXPECT_EQ(search.live_rows(), 0);
  return search.outcome().tokens;
}

TEST(WindowBeamSearch, FindsTheLikelierSequenceGreedyMisses) {
  auto c = small_contract();
  c.begin_suppress_tokens = {};
  c.suppress_tokens = {};
  auto r = rules(c);
  stream::WindowSearch greedy(
      r, stream::window_prompt(c, -1, stream::WhisperTask::kTranscribe, false, {}));
  EXPECT_EQ(run_search(greedy), (std::vector<int>{3, 0}));
  stream::WindowBeamSearch beam(
      r, stream::window_prompt(c, -1, stream::WhisperTask::kTranscribe, false, {}), 2);
  EXPECT_EQ(run_search(beam), (std::vector<int>{4, 5}));
  // Two finished sequences kept (beam 2), each ended by end-of-text.
  ASSERT_EQ(beam.finished().size(), 2u);
  EXPECT_TRUE(beam.finished()[0].ended);
  // The chosen one's mean log-probability counts its end-of-text.
  const auto outcome = beam.outcome();
  const auto& best =
      beam.finished()[0].tokens == std::vector<int>{4, 5} ? beam.finished()[0] : beam.finished()[1];
  EXPECT_NEAR(outcome.mean_log_probability, best.sum_log_probability / 3.0, 1e-12);
}

}  // namespace
}  // namespace voxrt
