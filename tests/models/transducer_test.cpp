// The transducer family end to end on icefall/sherpa-onnx layouts built from code with random
// weights (tests/models/icefall_transducer.py: an "lstm" export with caches batched on axis 1,
// a "conformer" export with caches on axis 2 and processed_lens, a "zipformer2" export with caches
// on axes 0 and 1 and processed_lens as an int64 cache): `voxrt build --model-dir`
// imports them without hand-written metadata; each engine matches onnxruntime on the exported
// ONNX; the Recognizer gives the text of the Python reference decoder (torch, the same modules)
// in greedy and modified beam search; a stream's text does not depend on its batch or on how its
// audio is cut; hotwords change the text where the reference says and nowhere else; import
// errors name the file and key.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "audio/audio_io.h"
#include "model_import/model_dir_import.h"
#include "model_test_files.h"
#include "ort/ort_bridge.h"
#include "stream/recognizer.h"
#include "stream_feeding.h"
#include "voxrt/engine.h"

namespace voxrt {
namespace {
namespace fs = std::filesystem;
using model_test::run_capture;
using model_test::write_wav;

fs::path source_dir() {
  return std::getenv("VOXRT_SOURCE_DIR") ? std::getenv("VOXRT_SOURCE_DIR") : ".";
}
// The CPU and GPU runs (VOXRT_TEST_DEVICE) each in a folder of their own.
fs::path work_dir() {
  const char* device = std::getenv("VOXRT_TEST_DEVICE");
  return model_test::process_work_dir(device != nullptr
                                          ? std::string("voxrt_transducer_test_") + device
                                          : std::string("voxrt_transducer_test"));
}

std::string script() {
  return (source_dir() / "tests/models/icefall_transducer.py").string();
}

struct Layout {
  std::string type;
  fs::path export_dir;
  fs::path bundle;
};

class TransducerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // VOXRT_TEST_DEVICE=cuda (ctest's gpu_models_transducer) builds every engine for the GPU,
    // through the CUDA plugin that libvoxrt.so opens.
    const char* device = std::getenv("VOXRT_TEST_DEVICE");
    cuda_ = device != nullptr && std::string(device) == "cuda";
    fs::create_directories(work_dir());
    // Two clips: the bundled recording, and a longer one (reversed, a pause, then quieter).
    auto clip = audio::read_audio_file((source_dir() / "samples/play_music.wav").string());
    ASSERT_TRUE(clip.has_value()) << clip.status().to_string();
    wavs_ = {(source_dir() / "samples/play_music.wav").string(),
             (work_dir() / "spliced.wav").string()};
    std::vector<float> spliced(clip->samples.rbegin(), clip->samples.rend());
    spliced.resize(spliced.size() + 4800, 0.0f);
    for (float s : clip->samples) spliced.push_back(0.5f * s);
    write_wav(wavs_[1], spliced);
    for (const char* type : {"lstm", "conformer", "zipformer2", "ctc"}) {
      Layout layout{type, work_dir() / type, work_dir() / (std::string(type) + ".bundle")};
      const std::string cmd = "/usr/bin/python3 '" + script() + "' export '" +
                              layout.export_dir.string() + "' --type " + type + " > '" +
                              (work_dir() / (std::string(type) + "_export.log")).string() +
                              "' 2>&1";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << "export failed: " << cmd;
      model_import::ModelDirImportOptions options;
      options.model_dir = layout.export_dir.string();
      options.bundle_dir = layout.bundle.string();
      options.build.autotune = false;
      options.build.device = cuda_ ? DeviceKind::kCuda : DeviceKind::kCpu;
      options.max_batch = 8;
      auto imported = model_import::import_model_dir(options);
      // Without a GPU the CUDA run skips; any other failure to build for it (the plugin not
      // found or not loading included: ctest registers this run only where it is built) fails.
      if (cuda_ && !imported.has_value() &&
          imported.status().message().find("no CUDA device") != std::string::npos) {
        skip_reason_ = "no CUDA engines (" + imported.status().message() + ")";
        return;
      }
      ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
      if (layout.type == "ctc") {
        EXPECT_EQ(imported->family, "ctc_streaming");
        ctc_ = layout;
        continue;
      }
      EXPECT_EQ(imported->family, "transducer");
      layouts_.push_back(layout);
    }
  }

  static std::shared_ptr<stream::Recognizer> make(const Layout& layout, stream::DecoderKind search,
                                                  int max_batch) {
    stream::RecognizerConfig config;
    config.engine_path = layout.bundle.string();
    config.vad = stream::VadKind::kOff;
    config.decoder = search;
    config.max_batch = max_batch;
    config.max_streams = 8;
    config.transducer.beam_width = 8;
    auto r = stream::Recognizer::create(config);
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : nullptr;
  }

  // Runs each (file, piece size, options) as a stream, all advanced together; returns each
  // stream's final texts joined.
  static std::vector<std::string> run(stream::Recognizer& r, const std::vector<std::string>& files,
                                      const std::vector<std::size_t>& pieces,
                                      const std::vector<stream::StreamOptions>& options = {}) {
    return model_test::final_texts_of_streams(r, files, pieces, options);
  }

  // The Python reference decoder's text per file; fails the test when voxrt's endpoint rules
  // would have cut the stream (the reference does not model endpoints).
  static std::vector<std::string> reference(const Layout& layout, const std::string& search,
                                            const std::string& extra = "") {
    const std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" +
                            layout.export_dir.string() + "' --search " + search + " --beam 8 " +
                            extra + " '" + wavs_[0] + "' '" + wavs_[1] + "' 2>/dev/null";
    std::vector<std::string> texts;
    std::istringstream lines(run_capture(cmd));
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;
      EXPECT_TRUE(j.value("endpoint_free", false))
          << "an endpoint rule would cut " << j.value("file", "") << ": the test clip is unfit";
      texts.push_back(j.value("text", ""));
    }
    EXPECT_EQ(texts.size(), 2u) << "reference failed: " << cmd;
    return texts;
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  }

  static inline bool cuda_ = false;
  static inline std::string skip_reason_;
  static inline std::vector<Layout> layouts_;  // the transducers
  static inline Layout ctc_;
  static inline std::vector<std::string> wavs_;
};

// A copy of `t` with axis `axis` moved to the front (the exporter's layout -> batch-first).
Tensor batch_first(const Tensor& t, int axis) {
  const Dims& d = t.dims();
  Dims out_dims = d;
  out_dims.erase(out_dims.begin() + axis);
  out_dims.insert(out_dims.begin(), d[static_cast<std::size_t>(axis)]);
  Tensor out = Tensor::uninitialized(t.dtype(), out_dims);
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= d[static_cast<std::size_t>(i)];
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  const std::int64_t batch = d[static_cast<std::size_t>(axis)];
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = 0; i < inner; ++i)
        dst[(b * outer + o) * inner + i] = src[(o * batch + b) * inner + i];
  return out;
}

Tensor random_f32(Dims dims, std::mt19937& rng, float scale = 1.0f) {
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  std::normal_distribution<float> normal(0.0f, scale);
  for (std::int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.element_count() != b.element_count()) return 1e30f;
  float worst = 0;
  for (std::int64_t i = 0; i < a.element_count(); ++i)
    worst = std::max(worst, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  return worst;
}

// Each engine of the bundle against onnxruntime on the exporter's ONNX file, states in the
// exporter's layout there and batch-first in the engine.
TEST_F(TransducerTest, EnginesMatchOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  std::mt19937 rng(7);
  for (const Layout& layout : layouts_) {
    SCOPED_TRACE(layout.type);
    const std::int64_t n = 3;
    // Each layout's caches as its exporter lays them out: name, dims, batch axis.
    struct Cache {
      std::string name;
      Dims dims;
      int batch_axis;
    };
    std::vector<Cache> caches;
    std::int64_t frames = 21;
    if (layout.type == "lstm") {
      caches = {{"state0", {2, n, 64}, 1}, {"state1", {2, n, 96}, 1}};
    } else if (layout.type == "conformer") {
      frames = 27;
      caches = {{"cached_attn", {2, 8, n, 64}, 2}, {"cached_conv", {2, 4, n, 64}, 2}};
    } else {
      frames = 23;
      for (int i = 0; i < 2; ++i) {
        caches.push_back({"cached_key_" + std::to_string(i), {8, n, 64}, 1});
        caches.push_back({"cached_conv_" + std::to_string(i), {n, 64, 4}, 0});
      }
      caches.push_back({"embed_states", {n, 2, 64}, 0});
    }
    std::vector<std::string> in_names = {"x"};
    std::vector<Tensor> ort_inputs = {random_f32({n, frames, 80}, rng, 4.0f)};
    std::vector<std::string> out_names = {"encoder_out"};
    std::map<std::string, int> axis_of;
    for (const Cache& c : caches) {
      in_names.push_back(c.name);
      ort_inputs.push_back(random_f32(c.dims, rng));
      out_names.push_back("new_" + c.name);
      axis_of[c.name] = axis_of["new_" + c.name] = c.batch_axis;
    }
    // The streaming Conformer's frame counter is an input; Zipformer2's is a cache (int64).
    if (layout.type != "lstm") {
      in_names.push_back("processed_lens");
      ort_inputs.push_back(Tensor::from_vector<std::int64_t>({n}, {0, 16, 160}));
      if (layout.type == "zipformer2") out_names.push_back("new_processed_lens");
    }
    auto expected =
        ort::run_onnxruntime((layout.export_dir / "encoder-epoch-99-avg-1.onnx").string(), in_names,
                             ort_inputs, out_names);
    ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
    auto encoder = Engine::load_file((layout.bundle / "encoder.engine").string());
    ASSERT_TRUE(encoder.has_value()) << encoder.status().to_string();
    auto context = (*encoder)->create_context();
    ASSERT_TRUE(context.has_value());
    std::vector<Tensor> engine_inputs;
    for (const auto& info : (*encoder)->inputs()) {
      auto at = std::find(in_names.begin(), in_names.end(), info.name) - in_names.begin();
      ASSERT_LT(static_cast<std::size_t>(at), in_names.size()) << info.name;
      const Tensor& t = ort_inputs[static_cast<std::size_t>(at)];
      auto axis = axis_of.find(info.name);
      engine_inputs.push_back(axis != axis_of.end() ? batch_first(t, axis->second) : t);
    }
    auto got = (*context)->run(engine_inputs);
    ASSERT_TRUE(got.has_value()) << got.status().to_string();
    for (std::size_t o = 0; o < out_names.size(); ++o) {
      const auto& outputs = (*encoder)->outputs();
      const auto at = static_cast<std::size_t>(
          std::find_if(outputs.begin(), outputs.end(),
                       [&](const TensorInfo& i) { return i.name == out_names[o]; }) -
          outputs.begin());
      ASSERT_LT(at, outputs.size()) << out_names[o];
      const Tensor& want = expected->outputs[o];
      if (want.dtype() == DType::kI64) {
        EXPECT_EQ(std::vector<std::int64_t>(want.data<std::int64_t>(),
                                            want.data<std::int64_t>() + want.element_count()),
                  std::vector<std::int64_t>((*got)[at].data<std::int64_t>(),
                                            (*got)[at].data<std::int64_t>() + want.element_count()))
            << out_names[o];
        continue;
      }
      auto axis = axis_of.find(out_names[o]);
      const Tensor batch_first_want =
          axis != axis_of.end() ? batch_first(want, axis->second) : want;
      EXPECT_LT(max_abs_diff((*got)[at], batch_first_want), 2e-4f) << out_names[o];
    }
    // Decoder (with the -1 "no unit yet" entries) and joiner.
    Tensor y = Tensor::from_vector<std::int64_t>({4, 2}, {-1, 0, 5, 7, 31, 3, 0, 0});
    auto dec_expected = ort::run_onnxruntime(
        (layout.export_dir / "decoder-epoch-99-avg-1.onnx").string(), {"y"}, {y}, {"decoder_out"});
    ASSERT_TRUE(dec_expected.has_value()) << dec_expected.status().to_string();
    auto decoder = Engine::load_file((layout.bundle / "decoder.engine").string());
    ASSERT_TRUE(decoder.has_value());
    auto dec_got = (*(*decoder)->create_context())->run(std::vector<Tensor>{y});
    ASSERT_TRUE(dec_got.has_value()) << dec_got.status().to_string();
    EXPECT_LT(max_abs_diff((*dec_got)[0], dec_expected->outputs[0]), 1e-4f);
    Tensor enc = random_f32({5, 48}, rng), dec = random_f32({5, 48}, rng);
    auto join_expected =
        ort::run_onnxruntime((layout.export_dir / "joiner-epoch-99-avg-1.onnx").string(),
                             {"encoder_out", "decoder_out"}, {enc, dec}, {"logit"});
    ASSERT_TRUE(join_expected.has_value()) << join_expected.status().to_string();
    auto joiner = Engine::load_file((layout.bundle / "joiner.engine").string());
    ASSERT_TRUE(joiner.has_value());
    auto join_got = (*(*joiner)->create_context())->run(std::vector<Tensor>{enc, dec});
    ASSERT_TRUE(join_got.has_value()) << join_got.status().to_string();
    EXPECT_LT(max_abs_diff((*join_got)[0], join_expected->outputs[0]), 1e-3f);
  }
}

TEST_F(TransducerTest, GreedyAndBeamGiveTheReferenceDecodersText) {
  for (const Layout& layout : layouts_) {
    for (auto search : {stream::DecoderKind::kGreedy, stream::DecoderKind::kBeam}) {
      const std::string name = search == stream::DecoderKind::kGreedy ? "greedy" : "beam";
      SCOPED_TRACE(layout.type + " " + name);
      const auto expected = reference(layout, name);
      auto r = make(layout, search, 4);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->model_family(), "transducer");
      const auto got = run(*r, wavs_, {320, 320});
      ASSERT_EQ(expected.size(), 2u);
      EXPECT_FALSE(expected[0].empty());
      EXPECT_EQ(got, expected);
      EXPECT_EQ(r->streams_open(), 0);
    }
  }
}

TEST_F(TransducerTest, BatchedStreamsCutDifferentlyEqualStreamsAlone) {
  for (const Layout& layout : layouts_) {
    for (auto search : {stream::DecoderKind::kGreedy, stream::DecoderKind::kBeam}) {
      SCOPED_TRACE(layout.type);
      auto alone = make(layout, search, 1);
      auto batched = make(layout, search, 4);
      ASSERT_TRUE(alone && batched);
      const std::string a = run(*alone, {wavs_[0]}, {320})[0];
      const std::string b = run(*alone, {wavs_[1]}, {320})[0];
      const auto texts = run(*batched, {wavs_[0], wavs_[1], wavs_[0], wavs_[1], wavs_[0]},
                             {320, 333, 7, 48000, 1000});
      EXPECT_EQ(texts, (std::vector<std::string>{a, b, a, b, a}));
    }
  }
}

TEST_F(TransducerTest, HotwordsChangeTheTextWhereTheReferenceSaysAndNowhereElse) {
  const Layout& layout = layouts_[0];
  // Pieces the model rarely emits, with a bonus large enough to win in places.
  const fs::path hotwords = work_dir() / "hotwords.txt";
  std::ofstream(hotwords) << "hij\n";
  const std::string extra = "--hotwords '" + hotwords.string() + "' --hotword-bonus 4";
  for (auto search : {stream::DecoderKind::kGreedy, stream::DecoderKind::kBeam}) {
    const std::string name = search == stream::DecoderKind::kGreedy ? "greedy" : "beam";
    SCOPED_TRACE(name);
    const auto plain = reference(layout, name);
    const auto boosted = reference(layout, name, extra);
    ASSERT_EQ(boosted.size(), 2u);
    EXPECT_NE(boosted[0], plain[0]) << "the hotword should change the reference's text";
    auto r = make(layout, search, 4);
    ASSERT_TRUE(r);
    stream::StreamOptions with;
    with.hotwords = {"hij"};
    with.decoding.hotword_bonus = 4.0f;
    // One boosted stream between two plain ones in the same batches.
    const auto texts = run(*r, {wavs_[0], wavs_[0], wavs_[1]}, {320, 320, 320},
                           {stream::StreamOptions{}, with, stream::StreamOptions{}});
    EXPECT_EQ(texts[0], plain[0]);
    EXPECT_EQ(texts[1], boosted[0]);
    EXPECT_EQ(texts[2], plain[1]);
  }
}

// icefall's streaming CTC layout (ctc*.onnx + tokens.txt) goes to the ctc family, with lookahead
// chunks (T 21, shift 16) and the silence frame as padding.
TEST_F(TransducerTest, StreamingCtcFromIcefallGivesTheReferenceText) {
  const auto expected = reference(ctc_, "greedy");
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_FALSE(expected[0].empty());
  auto alone = make(ctc_, stream::DecoderKind::kGreedy, 1);
  auto batched = make(ctc_, stream::DecoderKind::kGreedy, 4);
  ASSERT_TRUE(alone && batched);
  EXPECT_EQ(alone->model_family(), "ctc_streaming");
  EXPECT_EQ(run(*alone, wavs_, {320, 320}), expected);
  EXPECT_EQ(run(*batched, {wavs_[0], wavs_[1], wavs_[0]}, {7, 1000, 48000}),
            (std::vector<std::string>{expected[0], expected[1], expected[0]}));
  if (!ort::onnxruntime_available()) return;
  std::mt19937 rng(3);
  const std::int64_t n = 2;
  Tensor x = random_f32({n, 21, 80}, rng, 4.0f);
  Tensor h = random_f32({2, n, 64}, rng), c = random_f32({2, n, 96}, rng);
  auto want = ort::run_onnxruntime(
      (ctc_.export_dir / "ctc-epoch-99-avg-1-chunk-16-left-128.onnx").string(),
      {"x", "state0", "state1"}, {x, h, c}, {"log_probs", "new_state0", "new_state1"});
  ASSERT_TRUE(want.has_value()) << want.status().to_string();
  auto engine = Engine::load_file((ctc_.bundle / "model.engine").string());
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  auto got = (*(*engine)->create_context())
                 ->run(std::vector<Tensor>{x, batch_first(h, 1), batch_first(c, 1)});
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  EXPECT_LT(max_abs_diff((*got)[0], want->outputs[0]), 2e-4f);
  EXPECT_LT(max_abs_diff((*got)[1], batch_first(want->outputs[1], 1)), 2e-4f);
  EXPECT_LT(max_abs_diff((*got)[2], batch_first(want->outputs[2], 1)), 2e-4f);
}

TEST_F(TransducerTest, ImportErrorsNameTheFileAndKey) {
  const fs::path broken = work_dir() / "broken";
  auto attempt = [&](const std::string& expected_text) {
    model_import::ModelDirImportOptions options;
    options.model_dir = broken.string();
    options.bundle_dir = (work_dir() / "broken.bundle").string();
    options.build.autotune = false;
    auto imported = model_import::import_model_dir(options);
    ASSERT_FALSE(imported.has_value());
    EXPECT_NE(imported.status().message().find(expected_text), std::string::npos)
        << imported.status().message();
  };
  fs::remove_all(broken);
  fs::copy(layouts_[0].export_dir, broken);
  fs::remove(broken / "tokens.txt");
  attempt("tokens.txt");
  fs::copy(layouts_[0].export_dir / "tokens.txt", broken / "tokens.txt");
  fs::copy(broken / "encoder-epoch-99-avg-1.onnx", broken / "encoder-epoch-30-avg-1.onnx");
  attempt("more than one encoder file");
  fs::remove(broken / "encoder-epoch-30-avg-1.onnx");
  fs::remove(broken / "joiner-epoch-99-avg-1.onnx");
  attempt("no layout voxrt imports was recognised");
  fs::copy(layouts_[0].export_dir / "joiner-epoch-99-avg-1.onnx",
           broken / "joiner-epoch-99-avg-1.onnx");
  std::ofstream(broken / "tokens.txt", std::ios::app) << "EXTRA\n";
  attempt("tokens.txt:33");
  // A bundle's manifest names what is missing.
  stream::RecognizerConfig config;
  config.engine_path = layouts_[0].bundle.string();
  config.vad = stream::VadKind::kOff;
  const fs::path copy = work_dir() / "no_joiner.bundle";
  fs::remove_all(copy);
  fs::copy(layouts_[0].bundle, copy);
  fs::remove(copy / "joiner.engine");
  config.engine_path = copy.string();
  auto r = stream::Recognizer::create(config);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("joiner.engine"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace voxrt
