// NeMo Conformer-CTC exports end to end (tests/models/nemo_ctc.py makes them from code with random
// weights, in sherpa-onnx's layout and in NeMo's own export + .nemo files layout): NeMo's front
// end against a Python reference written from NeMo's definitions; `voxrt build --model-dir`
// imports both layouts without hand-written metadata (family ctc_offline, blank last); the
// engine matches onnxruntime on the exported ONNX; the Recognizer gives the Python reference
// decoder's text (front end + torch forward + greedy CTC, blank last); a stream's text does not
// depend on which streams share its batch; import errors name the missing file or the
// unexpected input.
#include <gtest/gtest.h>

#include <unistd.h>
#include <array>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "audio/audio_io.h"
#include "audio/nemo_features.h"
#include "model_import/model_dir_import.h"
#include "model_import/nemo_model_config.h"
#include "model_test_files.h"
#include "nemo_test_support.h"
#include "ort/ort_bridge.h"
#include "stream/recognizer.h"
#include "stream_feeding.h"
#include "voxrt/engine.h"

namespace voxrt {
namespace {
namespace fs = std::filesystem;
using model_test::import_dir;
using model_test::run_capture;
using model_test::write_wav;

fs::path source_dir() {
  return std::getenv("VOXRT_SOURCE_DIR") ? std::getenv("VOXRT_SOURCE_DIR") : ".";
}
fs::path work_dir() {
  return model_test::process_work_dir("voxrt_nemo_ctc_test");
}
std::string script() {
  return (source_dir() / "tests/models/nemo_ctc.py").string();
}

Status export_layout(const fs::path& dir, const std::string& layout, const std::string& extra) {
  const std::string cmd = "/usr/bin/python3 '" + script() + "' export '" + dir.string() +
                          "' --layout " + layout + " " + extra + " > '" + dir.string() +
                          ".log' 2>&1";
  if (std::system(cmd.c_str()) != 0) return internal_error("export failed: ", cmd);
  return Status::ok();
}

class NemoCtcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(work_dir());
    fs::create_directories(work_dir());
    auto wavs = model_test::write_three_clips(source_dir(), work_dir());
    ASSERT_TRUE(wavs.has_value()) << wavs.status().to_string();
    wavs_ = *wavs;
    // (name, exporter layout, exporter options): "nemo-factor8" is NeMo's layout of a model
    // subsampling by 8 with dw_striding, as FastConformer-CTC exports are.
    const std::vector<std::array<std::string, 3>> exports = {
        {"sherpa", "sherpa", ""},
        {"nemo", "nemo", ""},
        {"nemo-char", "nemo-char", ""},
        {"nemo-factor8", "nemo", "--subsampling 8"}};
    for (const auto& [name, layout, options] : exports) {
      const fs::path dir = work_dir() / name;
      const fs::path bundle = work_dir() / (name + ".bundle");
      ASSERT_TRUE(export_layout(dir, layout, options).is_ok());
      auto imported = import_dir(dir, bundle);
      ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
      EXPECT_EQ(imported->family, "ctc_offline");
      EXPECT_EQ(imported->layout, layout == "sherpa" ? "nemo-sherpa-onnx-ctc" : "nemo-export-ctc");
      layouts_.push_back({name, dir, bundle});
    }
  }

  struct Layout {
    std::string name;
    fs::path dir;
    fs::path bundle;
  };

  static std::shared_ptr<stream::Recognizer> make(
      const Layout& layout, int max_batch,
      stream::DecoderKind search = stream::DecoderKind::kGreedy) {
    stream::RecognizerConfig config;
    config.engine_path = layout.bundle.string();
    config.vad = stream::VadKind::kOff;
    config.decoder = search;
    config.beam.beam_width = 8;
    config.max_batch = max_batch;
    config.max_streams = 8;
    auto r = stream::Recognizer::create(config);
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : nullptr;
  }

  // Each file as a stream fed in `piece`-sample pieces, all advanced together; each stream's
  // final texts joined with '|'.
  static std::vector<std::string> run(stream::Recognizer& r, const std::vector<std::string>& files,
                                      std::size_t piece) {
    return model_test::final_texts_of_streams(r, files,
                                              std::vector<std::size_t>(files.size(), piece));
  }

  static std::vector<std::string> reference(const Layout& layout, int segment_hops = 0,
                                            const std::string& search = "greedy") {
    std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" + layout.dir.string() +
                      "' --segment-hops " + std::to_string(segment_hops) + " --search " + search +
                      " --beam 8";
    for (const auto& w : wavs_) cmd += " '" + w + "'";
    std::vector<std::string> texts;
    std::istringstream lines(run_capture(cmd + " 2>/dev/null"));
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) texts.push_back(j.value("text", ""));
    }
    EXPECT_EQ(texts.size(), wavs_.size()) << "reference failed: " << cmd;
    return texts;
  }

  static inline std::vector<Layout> layouts_;
  static inline std::vector<std::string> wavs_;
};

// NeMo's front end in C++ against tests/models/nemo_ctc.py's (torch.stft, librosa's Slaney mel
// written out, NeMo's normalisations), for each normalisation, pad_to 16, a reflecting pad and a
// 64-bin 20 ms window setting.
TEST_F(NemoCtcTest, FrontEndMatchesPythonReference) {
  struct Variant {
    std::string name;
    nlohmann::json settings;
  };
  const nlohmann::json base = {{"sample_rate", 16000},
                               {"window_size", 0.025},
                               {"window_stride", 0.01},
                               {"n_fft", 512},
                               {"features", 80},
                               {"preemph", 0.97},
                               {"log_zero_guard_value", 1.0 / 16777216.0},
                               {"normalize", "per_feature"},
                               {"pad_to", 0}};
  std::vector<Variant> variants = {{"per_feature", base}};
  variants.push_back({"all_features", base});
  variants.back().settings["normalize"] = "all_features";
  variants.push_back({"none_pad16", base});
  variants.back().settings["normalize"] = "NA";
  variants.back().settings["pad_to"] = 16;
  variants.push_back({"reflect_64bins_20ms", base});
  variants.back().settings["reflect_pad"] = true;
  variants.back().settings["features"] = 64;
  variants.back().settings["window_size"] = 0.02;
  variants.back().settings["n_fft"] = nullptr;
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const fs::path dir = work_dir() / ("frontend_" + v.name);
    fs::create_directories(dir);
    std::ofstream(dir / "frontend.json") << v.settings.dump();
    audio::NemoFeatureConfig config;
    config.window_size_s = v.settings["window_size"];
    config.n_fft = v.settings["n_fft"].is_null() ? 0 : v.settings["n_fft"].get<int>();
    config.n_mels = v.settings["features"];
    config.pad_to = v.settings["pad_to"];
    config.reflect_pad = v.settings.value("reflect_pad", false);
    config.normalize = *audio::nemo_normalize_from_name(v.settings["normalize"]);
    auto computer = audio::NemoFeatureComputer::create(config);
    ASSERT_TRUE(computer.has_value()) << computer.status().to_string();
    for (const std::string& wav : wavs_) {
      const fs::path out = dir / "features.bin";
      const std::string cmd = "/usr/bin/python3 '" + script() + "' frontend '" + dir.string() +
                              "' '" + wav + "' '" + out.string() + "' 2>/dev/null";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      std::ifstream in(out, std::ios::binary);
      std::int32_t dims[2] = {0, 0};
      in.read(reinterpret_cast<char*>(dims), sizeof dims);
      std::vector<float> want(static_cast<std::size_t>(dims[0]) * dims[1]);
      in.read(reinterpret_cast<char*>(want.data()),
              static_cast<std::streamsize>(want.size() * sizeof(float)));
      ASSERT_TRUE(in.good());
      auto clip = audio::read_audio_file(wav);
      ASSERT_TRUE(clip.has_value());
      // The driver hands the family whole hops: the reference cuts the audio the same way.
      const std::size_t hop = static_cast<std::size_t>(config.hop_samples());
      const std::size_t used = clip->samples.size() / hop * hop;
      auto got = computer->compute(std::span<const float>(clip->samples.data(), used));
      ASSERT_TRUE(got.has_value()) << got.status().to_string();
      ASSERT_EQ(got->n_mels, dims[0]);
      ASSERT_EQ(got->padded_frames, dims[1]);
      // Relative to the value's size where it exceeds 1: unnormalised log-mel values reach
      // |17| (log 2^-24), and the reference's float32 STFT carries ~1e-5 of relative error.
      float worst = 0.0f, worst_absolute = 0.0f;
      for (std::size_t i = 0; i < want.size(); ++i) {
        const float diff = std::abs(want[i] - got->values[i]);
        worst_absolute = std::max(worst_absolute, diff);
        worst = std::max(worst, diff / std::max(1.0f, std::abs(want[i])));
      }
      std::cout << "  " << v.name << " " << fs::path(wav).filename().string() << ": " << dims[0]
                << " x " << dims[1] << ", max |diff| " << worst_absolute
                << ", max |diff| / max(1, |value|) " << worst << "\n";
      EXPECT_LT(worst, 1e-4f) << wav;
    }
  }
}

// The engine of each bundle against onnxruntime on the exported ONNX: three utterances of
// different lengths padded into one batch.
TEST_F(NemoCtcTest, EngineMatchesOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor signal = Tensor::uninitialized(DType::kF32, {3, 80, 203});
  for (std::int64_t i = 0; i < signal.element_count(); ++i) signal.data<float>()[i] = normal(rng);
  const Tensor length = Tensor::from_vector<std::int64_t>({3}, {203, 150, 97});
  for (const Layout& layout : layouts_) {
    SCOPED_TRACE(layout.name);
    auto expected =
        ort::run_onnxruntime((layout.dir / "model.onnx").string(), {"audio_signal", "length"},
                             {signal, length}, {"logprobs"});
    ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
    auto engine = Engine::load_file((layout.bundle / "model.engine").string());
    ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
    auto context = (*engine)->create_context();
    ASSERT_TRUE(context.has_value());
    std::vector<Tensor> inputs;
    for (const auto& info : (*engine)->inputs())
      inputs.push_back(info.name == "length" ? length : signal);
    auto got = (*context)->run(inputs);
    ASSERT_TRUE(got.has_value()) << got.status().to_string();
    const Tensor& want = expected->outputs[0];
    ASSERT_EQ((*got)[0].dims(), want.dims());
    float worst = 0.0f;
    for (std::int64_t i = 0; i < want.element_count(); ++i)
      worst = std::max(worst, std::abs(want.data<float>()[i] - (*got)[0].data<float>()[i]));
    std::cout << "  " << layout.name << ": logprobs " << dims_to_string(want.dims())
              << ", max |diff| vs onnxruntime " << worst << "\n";
    EXPECT_LT(worst, 1e-3f);
  }
}

// The Recognizer's text is the Python reference decoder's, for every clip, one stream at a time;
// the reference must say something for the comparison to mean anything.
TEST_F(NemoCtcTest, TextMatchesReferenceDecoder) {
  for (const Layout& layout : layouts_) {
    SCOPED_TRACE(layout.name);
    const std::vector<std::string> want = reference(layout);
    ASSERT_EQ(want.size(), wavs_.size());
    EXPECT_FALSE(want[0].empty());
    auto r = make(layout, 1);
    ASSERT_NE(r, nullptr);
    for (std::size_t i = 0; i < wavs_.size(); ++i) {
      const auto got = run(*r, {wavs_[i]}, 1600);
      EXPECT_EQ(got[0], want[i]) << wavs_[i];
    }
  }
}

// Audio longer than voxrt.offline.max_frames hops runs as consecutive segments (each its own
// utterance for the front end and the model, their frames decoded as one sequence): the bundle's
// segment is cut to 70 hops (0.7 s), and the text is the reference's over the same segments,
// alone and in a batch.
TEST_F(NemoCtcTest, LongAudioRunsInSegments) {
  const Layout& layout = layouts_[0];
  const fs::path bundle = work_dir() / "short_segments.bundle";
  fs::remove_all(bundle);
  fs::copy(layout.bundle, bundle);
  nlohmann::json manifest;
  std::ifstream(bundle / "bundle.json") >> manifest;
  ASSERT_EQ(manifest["metadata"]["voxrt.offline.max_frames"], "3000");
  manifest["metadata"]["voxrt.offline.max_frames"] = "70";
  std::ofstream(bundle / "bundle.json") << manifest.dump(2);
  const std::vector<std::string> whole = reference(layout);
  const std::vector<std::string> want = reference(layout, 70);
  EXPECT_NE(want[0], whole[0]) << "the segments must change the text for the test to mean much";
  const Layout segmented{layout.name, layout.dir, bundle};
  auto alone = make(segmented, 1);
  auto together = make(segmented, 8);
  ASSERT_NE(alone, nullptr);
  ASSERT_NE(together, nullptr);
  for (std::size_t i = 0; i < wavs_.size(); ++i)
    EXPECT_EQ(run(*alone, {wavs_[i]}, 1000)[0], want[i]) << wavs_[i];
  EXPECT_EQ(run(*together, wavs_, 3000), want);
}

// The CTC prefix beam search (width 8, no LM) with NeMo's blank last gives the text of the
// reference's prefix beam search, which differs from greedy's on these clips.
TEST_F(NemoCtcTest, BeamSearchMatchesReference) {
  for (const Layout& layout : layouts_) {
    SCOPED_TRACE(layout.name);
    const std::vector<std::string> want = reference(layout, 0, "beam");
    ASSERT_EQ(want.size(), wavs_.size());
    EXPECT_NE(want, reference(layout)) << "beam and greedy agree: the test would not tell";
    auto r = make(layout, 8, stream::DecoderKind::kBeam);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(run(*r, wavs_, 1600), want);
  }
}

// All clips as streams advanced together in one batch give the texts they give alone, whatever
// the piece size the audio arrives in.
TEST_F(NemoCtcTest, TextDoesNotDependOnTheBatch) {
  for (const Layout& layout : layouts_) {
    SCOPED_TRACE(layout.name);
    auto alone = make(layout, 1);
    auto together = make(layout, 8);
    ASSERT_NE(alone, nullptr);
    ASSERT_NE(together, nullptr);
    std::vector<std::string> one_at_a_time;
    for (const auto& w : wavs_) one_at_a_time.push_back(run(*alone, {w}, 16000)[0]);
    ASSERT_FALSE(one_at_a_time[0].empty()) << "nothing decoded: the comparison would be empty";
    std::vector<std::string> files = wavs_;
    files.push_back(wavs_[0]);
    std::vector<std::string> want = one_at_a_time;
    want.push_back(one_at_a_time[0]);
    EXPECT_EQ(run(*together, files, 777), want);
  }
}

// The YAML subset of model_config.yaml: OmegaConf's list items at the key's indentation, quoted
// scalars ('' and \" escapes), flow lists, comments, maps inside lists, nulls; errors give the
// line.
TEST(NemoModelConfig, ReadsTheYamlOmegaConfWrites) {
  const std::string text =
      "# comment\n"
      "preprocessor:\n"
      "  window_size: 0.025  # seconds\n"
      "  n_fft: null\n"
      "  normalize: per_feature\n"
      "decoder:\n"
      "  vocabulary:\n"
      "  - ' '\n"
      "  - 'it''s'\n"
      "  - \"#\"\n"
      "  - a\n"
      "  num_classes: 4\n"
      "flow: [1, 'b, c', \"d\"]\n"
      "items:\n"
      "- name: x\n"
      "  value: 1\n"
      "- plain\n"
      "lookaheads:\n"
      "- - 70\n"
      "  - 13\n"
      "- - 70\n"
      "  - 6\n";
  auto root = model_import::parse_yaml_subset(text, "model_config.yaml");
  ASSERT_TRUE(root.has_value()) << root.status().to_string();
  EXPECT_EQ((*root)->at("preprocessor.window_size")->scalar, "0.025");
  EXPECT_TRUE((*root)->at("preprocessor.n_fft")->is_null());
  const auto* vocabulary = (*root)->at("decoder.vocabulary");
  ASSERT_NE(vocabulary, nullptr);
  ASSERT_EQ(vocabulary->list.size(), 4u);
  EXPECT_EQ(vocabulary->list[0]->scalar, " ");
  EXPECT_EQ(vocabulary->list[1]->scalar, "it's");
  EXPECT_EQ(vocabulary->list[2]->scalar, "#");
  EXPECT_EQ(vocabulary->list[3]->scalar, "a");
  EXPECT_EQ((*root)->at("decoder.num_classes")->scalar, "4");
  const auto* flow = (*root)->get("flow");
  ASSERT_EQ(flow->list.size(), 3u);
  EXPECT_EQ(flow->list[1]->scalar, "b, c");
  const auto* items = (*root)->get("items");
  ASSERT_EQ(items->list.size(), 2u);
  EXPECT_EQ(items->list[0]->get("value")->scalar, "1");
  EXPECT_EQ(items->list[1]->scalar, "plain");
  // A list of lists as OmegaConf writes one (a multi-lookahead model's att_context_size).
  const auto* lookaheads = (*root)->get("lookaheads");
  ASSERT_NE(lookaheads, nullptr);
  ASSERT_EQ(lookaheads->list.size(), 2u);
  ASSERT_EQ(lookaheads->list[1]->list.size(), 2u);
  EXPECT_EQ(lookaheads->list[0]->list[1]->scalar, "13");
  EXPECT_EQ(lookaheads->list[1]->list[1]->scalar, "6");
  // Malformed text is an error or an opaque value, never a crash.
  const std::vector<std::string> malformed = {"- - -\n",
                                              ": :\n",
                                              "[unclosed\n",
                                              "a:\n- \n  - x\nb: 'open\n",
                                              "\t- x\n",
                                              "a: |\n  text\n b\n",
                                              "- a: 1\n b: 2\n",
                                              std::string(2000, ' ') + "a: 1\nb: 2\n",
                                              "a:\n" + std::string(300, ' ') + "- x\n"};
  for (const std::string& garbage : malformed) {
    auto parsed = model_import::parse_yaml_subset(garbage, "garbage.yaml");
    if (!parsed) {
      EXPECT_NE(parsed.status().message().find("garbage.yaml"), std::string::npos);
    }
  }
  // Nesting beyond the limit is refused by line, not followed down the stack (the fuzzer found
  // 20,000 nested maps overflowing it).
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += std::string(static_cast<std::size_t>(i), ' ') + "a:\n";
  auto too_deep = model_import::parse_yaml_subset(deep, "deep.yaml");
  ASSERT_FALSE(too_deep.has_value());
  EXPECT_NE(too_deep.status().message().find("deep.yaml:65: nested deeper than 64 levels"),
            std::string::npos)
      << too_deep.status().message();
  auto bad = model_import::parse_yaml_subset("a: 1\n  b: 2\nc\n", "cfg.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("cfg.yaml:2"), std::string::npos) << bad.status().message();
}

TEST_F(NemoCtcTest, ImportErrorsNameTheFileOrInput) {
  // sherpa-onnx's layout without tokens.txt: no layout recognised, and the message says what
  // each layout needs.
  const fs::path no_tokens = work_dir() / "no_tokens";
  fs::create_directories(no_tokens);
  fs::copy_file(layouts_[0].dir / "model.onnx", no_tokens / "model.onnx");
  auto r = import_dir(no_tokens, work_dir() / "no_tokens.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("tokens.txt"), std::string::npos) << r.status().message();
  // NeMo's layout without the tokenizer's vocabulary and model names the files it looked for
  // (with the model alone, its pieces are read: models_nemo_cache_aware).
  const fs::path no_vocab = work_dir() / "no_vocab";
  fs::create_directories(no_vocab);
  for (const auto& entry : fs::directory_iterator(layouts_[1].dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with("tokenizer.vocab") && !name.ends_with("tokenizer.model"))
      fs::copy_file(entry.path(), no_vocab / name);
  }
  r = import_dir(no_vocab, work_dir() / "no_vocab.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("tokenizer.vocab"), std::string::npos)
      << r.status().message();
  // An export whose length input has another name: the unexpected input is named.
  const fs::path renamed = work_dir() / "renamed_input";
  ASSERT_TRUE(export_layout(renamed, "sherpa", "--length-name lengths").is_ok());
  r = import_dir(renamed, work_dir() / "renamed_input.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("unexpected input 'lengths'"), std::string::npos)
      << r.status().message();
  // tokens.txt whose last token is not the blank.
  const fs::path blank_first = work_dir() / "blank_first";
  fs::create_directories(blank_first);
  fs::copy_file(layouts_[0].dir / "model.onnx", blank_first / "model.onnx");
  {
    std::ifstream in(layouts_[0].dir / "tokens.txt");
    std::vector<std::string> pieces;
    for (std::string line; std::getline(in, line);)
      pieces.push_back(line.substr(0, line.find(' ')));
    std::ofstream out(blank_first / "tokens.txt");
    out << pieces.back() << " 0\n";
    for (std::size_t i = 0; i + 1 < pieces.size(); ++i) out << pieces[i] << " " << i + 1 << "\n";
  }
  r = import_dir(blank_first, work_dir() / "blank_first.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("expected <blk>"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace voxrt
