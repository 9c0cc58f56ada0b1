// NeMo transducers end to end (tests/models/nemo_transducer.py makes them from code with random
// weights in sherpa-onnx's NeMo transducer layout: an RNN-T and a TDT model, FastConformer-like
// encoder subsampling by 8, LSTM prediction network, joint network): `voxrt build --model-dir`
// imports both without hand-written metadata (family transducer_offline, blank last, TDT
// durations from the joiner's width); the engines match onnxruntime on the exported ONNX; the
// Recognizer gives the Python reference decoder's text (NeMo's front end, the torch modules and
// NeMo's greedy RNN-T / TDT rules); segments of long audio, max_symbols, a stream's text does
// not depend on its batch mates; modified beam search (RNN-T) and TDT beam search = the
// reference's, with and without hotwords; import errors name the file and what was expected.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "audio/audio_io.h"
#include "model_import/model_dir_import.h"
#include "model_test_files.h"
#include "nemo_test_support.h"
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
fs::path work_dir() {
  return model_test::process_work_dir("voxrt_nemo_transducer_test");
}
std::string script() {
  return (source_dir() / "tests/models/nemo_transducer.py").string();
}

Status export_model(const fs::path& dir, const std::string& extra) {
  const std::string cmd = "/usr/bin/python3 '" + script() + "' export '" + dir.string() + "' " +
                          extra + " > '" + dir.string() + ".log' 2>&1";
  if (std::system(cmd.c_str()) != 0) return internal_error("export failed: ", cmd);
  return Status::ok();
}

Expected<model_import::ModelDirImportReport> import_dir(const fs::path& dir,
                                                        const fs::path& bundle) {
  model_import::ModelDirImportOptions options;
  options.model_dir = dir.string();
  options.bundle_dir = bundle.string();
  options.build.autotune = false;
  options.max_batch = 8;
  options.max_beam = 1;
  return model_import::import_model_dir(options);
}

class NemoTransducerTest : public ::testing::Test {
 protected:
  struct Model {
    std::string name;
    fs::path dir;
    fs::path bundle;
  };

  static void SetUpTestSuite() {
    fs::remove_all(work_dir());
    fs::create_directories(work_dir());
    auto wavs = model_test::write_three_clips(source_dir(), work_dir());
    ASSERT_TRUE(wavs.has_value()) << wavs.status().to_string();
    wavs_ = *wavs;
    for (const auto& [name, options] :
         std::vector<std::pair<std::string, std::string>>{{"rnnt", ""}, {"tdt", "--tdt"}}) {
      const fs::path dir = work_dir() / name;
      const fs::path bundle = work_dir() / (name + ".bundle");
      ASSERT_TRUE(export_model(dir, options).is_ok());
      auto imported = import_dir(dir, bundle);
      ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
      EXPECT_EQ(imported->family, "transducer_offline");
      EXPECT_EQ(imported->layout, "nemo-sherpa-onnx-transducer");
      models_.push_back({name, dir, bundle});
    }
  }

  static std::shared_ptr<stream::Recognizer> make(const fs::path& bundle, int max_batch,
                                                  int max_symbols = 0) {
    stream::RecognizerConfig config;
    config.engine_path = bundle.string();
    config.vad = stream::VadKind::kOff;
    config.max_batch = max_batch;
    config.max_streams = 8;
    config.transducer.max_symbols_per_frame = max_symbols;
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

  static std::vector<std::string> reference(const Model& model, int segment_hops = 0,
                                            int max_symbols = 10) {
    std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" + model.dir.string() +
                      "' --segment-hops " + std::to_string(segment_hops) + " --max-symbols " +
                      std::to_string(max_symbols);
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

  static nlohmann::json manifest(const fs::path& bundle) {
    nlohmann::json m;
    std::ifstream(bundle / "bundle.json") >> m;
    return m;
  }

  static inline std::vector<Model> models_;
  static inline std::vector<std::string> wavs_;
};

// What the import read: the TDT model's durations from the joiner's extra logits, none for RNN-T,
// the prediction network's shape, NeMo's names, the blank last.
TEST_F(NemoTransducerTest, ImportWritesTheContract) {
  const auto rnnt = manifest(models_[0].bundle)["metadata"];
  const auto tdt = manifest(models_[1].bundle)["metadata"];
  EXPECT_EQ(rnnt["voxrt.model_family"], "transducer_offline");
  EXPECT_FALSE(rnnt.contains("voxrt.transducer.durations"));
  EXPECT_EQ(tdt["voxrt.transducer.durations"], "0,1,2,3,4");
  EXPECT_EQ(rnnt["voxrt.transducer.pred_rnn_layers"], "2");
  EXPECT_EQ(rnnt["voxrt.transducer.pred_hidden"], "32");
  EXPECT_EQ(rnnt["voxrt.transducer.decoder_inputs"],
            "targets,target_length,states.1,onnx::Slice_3");
  EXPECT_EQ(rnnt["voxrt.blank_id"], "23");
  EXPECT_EQ(rnnt["voxrt.subsampling"], "8");
  EXPECT_EQ(rnnt["voxrt.nemo.normalize"], "per_feature");
}

// Each engine of each bundle against onnxruntime on the exported ONNX.
TEST_F(NemoTransducerTest, EnginesMatchOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](Dims dims) {
    Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
    for (auto& v : t.span<float>()) v = normal(rng);
    return t;
  };
  struct Case {
    std::string file;
    std::string engine;
    std::vector<std::string> names;
    std::vector<Tensor> inputs;
    std::vector<std::string> outputs;
  };
  for (const Model& model : models_) {
    SCOPED_TRACE(model.name);
    const std::vector<Case> cases = {
        {"encoder.onnx",
         "encoder.engine",
         {"audio_signal", "length"},
         {random({3, 80, 203}), Tensor::from_vector<std::int64_t>({3}, {203, 150, 97})},
         {"outputs"}},
        {"decoder.onnx",
         "decoder.engine",
         {"targets", "target_length", "states.1", "onnx::Slice_3"},
         {Tensor::from_vector<std::int32_t>({3, 1}, {23, 4, 17}),
          Tensor::from_vector<std::int32_t>({3}, {1, 1, 1}), random({2, 3, 32}),
          random({2, 3, 32})},
         {"outputs", "states", "162"}},
        {"joiner.onnx",
         "joiner.engine",
         {"encoder_outputs", "decoder_outputs"},
         {random({3, 64, 1}), random({3, 32, 1})},
         {"outputs"}}};
    for (const Case& c : cases) {
      SCOPED_TRACE(c.file);
      auto expected =
          ort::run_onnxruntime((model.dir / c.file).string(), c.names, c.inputs, c.outputs);
      ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
      auto engine = Engine::load_file((model.bundle / c.engine).string());
      ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
      auto context = (*engine)->create_context();
      ASSERT_TRUE(context.has_value());
      std::vector<Tensor> inputs;
      for (const auto& info : (*engine)->inputs()) {
        auto at = std::find(c.names.begin(), c.names.end(), info.name);
        ASSERT_NE(at, c.names.end()) << info.name;
        inputs.push_back(c.inputs[static_cast<std::size_t>(at - c.names.begin())]);
      }
      auto got = (*context)->run(inputs);
      ASSERT_TRUE(got.has_value()) << got.status().to_string();
      for (std::size_t o = 0; o < c.outputs.size(); ++o) {
        std::size_t at = 0;
        while (at < (*engine)->outputs().size() && (*engine)->outputs()[at].name != c.outputs[o])
          ++at;
        ASSERT_LT(at, got->size()) << c.outputs[o];
        const Tensor& want = expected->outputs[o];
        const Tensor& have = (*got)[at];
        ASSERT_EQ(have.element_count(), want.element_count()) << c.outputs[o];
        float worst = 0.0f;
        for (std::int64_t i = 0; i < want.element_count(); ++i)
          worst = std::max(worst, std::abs(want.data<float>()[i] - have.data<float>()[i]));
        std::cout << "  " << model.name << " " << c.file << " " << c.outputs[o] << " "
                  << dims_to_string(want.dims()) << ": max |diff| vs onnxruntime " << worst << "\n";
        EXPECT_LT(worst, 1e-3f) << c.outputs[o];
      }
    }
  }
}

// The Recognizer's text is the Python reference decoder's (NeMo's greedy rules, max_symbols 10),
// for every clip, one stream at a time; the reference must say something.
TEST_F(NemoTransducerTest, TextMatchesReferenceDecoder) {
  for (const Model& model : models_) {
    SCOPED_TRACE(model.name);
    const std::vector<std::string> want = reference(model);
    ASSERT_EQ(want.size(), wavs_.size());
    EXPECT_FALSE(want[0].empty());
    auto r = make(model.bundle, 1);
    ASSERT_NE(r, nullptr);
    for (std::size_t i = 0; i < wavs_.size(); ++i) {
      const auto got = run(*r, {wavs_[i]}, 1600);
      EXPECT_EQ(got[0], want[i]) << wavs_[i];
      std::cout << "  " << model.name << " " << fs::path(wavs_[i]).filename().string() << ": '"
                << got[0] << "'\n";
    }
  }
}

// A recognizer's max_symbols_per_frame (0: the bundle's, NeMo's 10) replaces NeMo's: the text is
// the reference's with the same limit, and differs from the default's on these clips.
TEST_F(NemoTransducerTest, MaxSymbolsPerFrame) {
  for (const Model& model : models_) {
    SCOPED_TRACE(model.name);
    // (TDT moves on after most units by their duration: only a limit of 1 changes its text.)
    const int limit = model.name == "tdt" ? 1 : 2;
    const std::vector<std::string> want = reference(model, 0, limit);
    EXPECT_NE(want, reference(model)) << "the limit must change the text for the test to tell";
    auto r = make(model.bundle, 8, limit);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(run(*r, wavs_, 1600), want);
  }
}

// Audio longer than voxrt.offline.max_frames hops runs as consecutive segments (each its own
// utterance for the front end and the encoder, the prediction state carried over): the bundle's
// segment is cut to 70 hops, and the text is the reference's over the same segments, alone and
// in a batch.
TEST_F(NemoTransducerTest, LongAudioRunsInSegments) {
  for (const Model& model : models_) {
    SCOPED_TRACE(model.name);
    const fs::path bundle = work_dir() / (model.name + "_short_segments.bundle");
    fs::remove_all(bundle);
    fs::copy(model.bundle, bundle);
    nlohmann::json m = manifest(bundle);
    ASSERT_EQ(m["metadata"]["voxrt.offline.max_frames"], "3000");
    m["metadata"]["voxrt.offline.max_frames"] = "70";
    std::ofstream(bundle / "bundle.json") << m.dump(2);
    const std::vector<std::string> want = reference(model, 70);
    EXPECT_NE(want, reference(model)) << "the segments must change the text for the test to tell";
    auto alone = make(bundle, 1);
    auto together = make(bundle, 8);
    ASSERT_NE(alone, nullptr);
    ASSERT_NE(together, nullptr);
    for (std::size_t i = 0; i < wavs_.size(); ++i)
      EXPECT_EQ(run(*alone, {wavs_[i]}, 1000)[0], want[i]) << wavs_[i];
    EXPECT_EQ(run(*together, wavs_, 3000), want);
  }
}

// All clips as streams advanced together in one batch give the texts they give alone.
TEST_F(NemoTransducerTest, TextDoesNotDependOnTheBatch) {
  for (const Model& model : models_) {
    SCOPED_TRACE(model.name);
    auto alone = make(model.bundle, 1);
    auto together = make(model.bundle, 8);
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

// A bundle whose max_symbols_per_frame is out of range is refused when the recognizer opens it.
TEST_F(NemoTransducerTest, BundleMaxSymbolsOutOfRangeIsAnError) {
  const fs::path bundle = work_dir() / "too_many_symbols.bundle";
  fs::remove_all(bundle);
  fs::copy(models_[0].bundle, bundle);
  nlohmann::json m = manifest(bundle);
  m["metadata"]["voxrt.transducer.max_symbols_per_frame"] = "17";
  std::ofstream(bundle / "bundle.json") << m.dump(2);
  stream::RecognizerConfig config;
  config.engine_path = bundle.string();
  config.vad = stream::VadKind::kOff;
  auto r = stream::Recognizer::create(config);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("max_symbols_per_frame must be 1..16, found 17"),
            std::string::npos)
      << r.status().message();
}

// Modified beam search with the LSTM state per hypothesis (RNN-T): the reference's, width 4 and
// 8, the clips as streams of one batch, and over segments of 70 hops; it differs from greedy's.
TEST_F(NemoTransducerTest, BeamSearchMatchesReference) {
  const Model& model = models_[0];
  for (int beam : {4, 8}) {
    SCOPED_TRACE(beam);
    std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" + model.dir.string() +
                      "' --search beam --beam " + std::to_string(beam);
    std::vector<std::string> want;
    for (const auto& w : wavs_) cmd += " '" + w + "'";
    std::istringstream lines(run_capture(cmd + " 2>/dev/null"));
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) want.push_back(j.value("text", ""));
    }
    ASSERT_EQ(want.size(), wavs_.size()) << cmd;
    EXPECT_NE(want, reference(model)) << "beam and greedy agree: the test would not tell";
    stream::RecognizerConfig config;
    config.engine_path = model.bundle.string();
    config.vad = stream::VadKind::kOff;
    config.decoder = stream::DecoderKind::kBeam;
    config.transducer.beam_width = beam;
    config.max_batch = 8;
    auto r = stream::Recognizer::create(config);
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    EXPECT_EQ(run(**r, wavs_, 1600), want);
    std::cout << "  beam " << beam << ": '" << want[0] << "'\n";
  }
}

// Greedy and beam streams in one batch (each stream's own decoder): each gives its reference's
// text, so the family's split of a batch between the two searches keeps the streams apart.
TEST_F(NemoTransducerTest, GreedyAndBeamStreamsShareABatch) {
  const Model& model = models_[0];
  const std::vector<std::string> greedy = reference(model);
  std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" + model.dir.string() +
                    "' --search beam --beam 4 '" + wavs_[0] + "' 2>/dev/null";
  const auto beam = nlohmann::json::parse(run_capture(cmd), nullptr, false);
  ASSERT_FALSE(beam.is_discarded()) << cmd;
  ASSERT_NE(beam.value("text", ""), greedy[0]) << "beam and greedy agree: the test would not tell";
  auto r = make(model.bundle, 8);
  ASSERT_NE(r, nullptr);
  std::vector<stream::StreamOptions> options(3);
  options[1].decoder = stream::DecoderKind::kBeam;
  options[1].decoding.beam_width = 4;
  std::vector<std::string> got(3);
  model_test::feed_files_as_streams(*r, {wavs_[0], wavs_[0], wavs_[1]}, {1600, 1600, 1600}, options,
                                    [&](std::size_t i, const stream::StreamResult& result) {
                                      if (result.result.is_final)
                                        got[i] += (got[i].empty() ? "" : "|") + result.result.text;
                                    });
  EXPECT_EQ(got, (std::vector<std::string>{greedy[0], beam.value("text", ""), greedy[1]}));
}

// Hotwords in the modified beam search (the stream's context graph, voxrt's default bonus 1.5):
// the text is the reference's with the same phrases (its ContextGraph is icefall_transducer.py's
// copy of voxrt's); each phrase changes the first clip's text; the stream next to it in the batch,
// without hotwords, keeps the text it has alone.
TEST_F(NemoTransducerTest, HotwordsInBeamSearch) {
  const Model& model = models_[0];
  auto beam_reference = [&](const std::string& phrase) {
    std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" + model.dir.string() +
                      "' --search beam --beam 4";
    if (!phrase.empty()) {
      const fs::path file = work_dir() / "hotwords.txt";
      std::ofstream(file) << phrase << "\n";
      cmd += " --hotwords '" + file.string() + "' --hotword-bonus 1.5";
    }
    std::vector<std::string> texts;
    for (const auto& w : wavs_) cmd += " '" + w + "'";
    std::istringstream lines(run_capture(cmd + " 2>/dev/null"));
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) texts.push_back(j.value("text", ""));
    }
    EXPECT_EQ(texts.size(), wavs_.size()) << cmd;
    return texts;
  };
  const std::vector<std::string> plain = beam_reference("");
  stream::RecognizerConfig config;
  config.engine_path = model.bundle.string();
  config.vad = stream::VadKind::kOff;
  config.decoder = stream::DecoderKind::kBeam;
  config.transducer.beam_width = 4;
  config.max_batch = 8;
  auto r = stream::Recognizer::create(config);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  for (const std::string phrase : {"B EFG", "C D"}) {
    SCOPED_TRACE(phrase);
    const std::vector<std::string> want = beam_reference(phrase);
    ASSERT_EQ(want.size(), wavs_.size());
    EXPECT_NE(want[0], plain[0]) << "the phrase must change the text for the test to tell";
    std::vector<stream::StreamOptions> options(wavs_.size());
    for (auto& o : options) o.hotwords = {phrase};
    std::vector<std::string> got(wavs_.size());
    model_test::feed_files_as_streams(
        **r, wavs_, std::vector<std::size_t>(wavs_.size(), 1600), options,
        [&](std::size_t i, const stream::StreamResult& result) {
          if (result.result.is_final) got[i] += (got[i].empty() ? "" : "|") + result.result.text;
        });
    EXPECT_EQ(got, want);
    // The first clip with the phrase next to the second without: each as alone.
    std::vector<stream::StreamOptions> mixed(2);
    mixed[0].hotwords = {phrase};
    std::vector<std::string> pair(2);
    model_test::feed_files_as_streams(**r, {wavs_[0], wavs_[1]}, {1600, 1600}, mixed,
                                      [&](std::size_t i, const stream::StreamResult& result) {
                                        if (result.result.is_final)
                                          pair[i] +=
                                              (pair[i].empty() ? "" : "|") + result.result.text;
                                      });
    EXPECT_EQ(pair[0], want[0]);
    EXPECT_EQ(pair[1], plain[1]);
  }
}

// The reference decoder's texts for the clips with extra arguments (e.g. "--search beam --beam 4").
std::vector<std::string> reference_with(const fs::path& dir, const std::vector<std::string>& wavs,
                                        const std::string& args) {
  std::string cmd = "/usr/bin/python3 '" + script() + "' reference '" + dir.string() + "' " + args;
  for (const auto& w : wavs) cmd += " '" + w + "'";
  std::vector<std::string> texts;
  std::istringstream lines(run_capture(cmd + " 2>/dev/null"));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) texts.push_back(j.value("text", ""));
  }
  EXPECT_EQ(texts.size(), wavs.size()) << "reference failed: " << cmd;
  return texts;
}

// The clips as streams of one batch, each with the hotword `phrase`, must give `want`; a stream
// with it beside one without must give want[0], and the other its own text (plain[1]).
void expect_hotword_texts(stream::Recognizer& r, const std::vector<std::string>& wavs,
                          const std::string& phrase, const std::vector<std::string>& want,
                          const std::vector<std::string>& plain) {
  auto texts = [&](const std::vector<std::string>& files,
                   const std::vector<stream::StreamOptions>& options) {
    std::vector<std::string> got(files.size());
    model_test::feed_files_as_streams(
        r, files, std::vector<std::size_t>(files.size(), 1600), options,
        [&](std::size_t i, const stream::StreamResult& result) {
          if (result.result.is_final) got[i] += (got[i].empty() ? "" : "|") + result.result.text;
        });
    return got;
  };
  std::vector<stream::StreamOptions> options(wavs.size());
  for (auto& o : options) o.hotwords = {phrase};
  EXPECT_EQ(texts(wavs, options), want);
  std::vector<stream::StreamOptions> mixed(2);
  mixed[0].hotwords = {phrase};
  const std::vector<std::string> pair = texts({wavs[0], wavs[1]}, mixed);
  EXPECT_EQ(pair[0], want[0]);
  EXPECT_EQ(pair[1], plain[1]);
}

std::shared_ptr<stream::Recognizer> make_beam(const fs::path& bundle, int beam, int max_batch,
                                              int max_symbols = 0) {
  stream::RecognizerConfig config;
  config.engine_path = bundle.string();
  config.vad = stream::VadKind::kOff;
  config.decoder = stream::DecoderKind::kBeam;
  config.transducer.beam_width = beam;
  config.transducer.max_symbols_per_frame = max_symbols;
  config.max_batch = max_batch;
  config.max_streams = 8;
  auto r = stream::Recognizer::create(config);
  EXPECT_TRUE(r.has_value()) << r.status().to_string();
  return r ? *r : nullptr;
}

// TDT beam search (decode/stateful_tdt_beam.h) = the reference's tdt_beam, widths 2, 4 and 8, the
// three clips as streams of one batch; widths that change the text (beam 4 and 8 do on these
// clips); width 1 = the greedy search, in voxrt and in the reference.
TEST_F(NemoTransducerTest, TdtBeamSearchMatchesReference) {
  const Model& model = models_[1];
  ASSERT_EQ(model.name, "tdt");
  const std::vector<std::string> greedy = reference(model);
  int differ = 0;
  for (int beam : {2, 4, 8}) {
    SCOPED_TRACE(beam);
    const std::vector<std::string> want =
        reference_with(model.dir, wavs_, "--search beam --beam " + std::to_string(beam));
    ASSERT_EQ(want.size(), wavs_.size());
    if (want != greedy) ++differ;
    auto r = make_beam(model.bundle, beam, 8);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(run(*r, wavs_, 1600), want);
    std::cout << "  tdt beam " << beam << ": '" << want[0] << "' '" << want[1] << "' '" << want[2]
              << "'\n";
  }
  EXPECT_GE(differ, 2) << "beam and greedy agree: the test would not tell";
  EXPECT_EQ(reference_with(model.dir, wavs_, "--search beam --beam 1"), greedy);
  auto one = make_beam(model.bundle, 1, 8);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(run(*one, wavs_, 1600), greedy);
}

// TDT beam search over segments of 70 hops (the hypotheses carried from one segment to the next)
// and with max_symbols_per_frame 1: the reference with the same segments / limit, alone and in a
// batch; both change the text (so the test can tell).
TEST_F(NemoTransducerTest, TdtBeamSearchOverSegmentsAndMaxSymbols) {
  const Model& model = models_[1];
  const std::vector<std::string> plain = reference_with(model.dir, wavs_, "--search beam --beam 4");
  const fs::path bundle = work_dir() / "tdt_beam_short_segments.bundle";
  fs::remove_all(bundle);
  fs::copy(model.bundle, bundle);
  nlohmann::json m = manifest(bundle);
  m["metadata"]["voxrt.offline.max_frames"] = "70";
  std::ofstream(bundle / "bundle.json") << m.dump(2);
  const std::vector<std::string> segmented =
      reference_with(model.dir, wavs_, "--segment-hops 70 --search beam --beam 4");
  EXPECT_NE(segmented, plain) << "the segments must change the text for the test to tell";
  auto alone = make_beam(bundle, 4, 1);
  auto together = make_beam(bundle, 4, 8);
  ASSERT_NE(alone, nullptr);
  ASSERT_NE(together, nullptr);
  for (std::size_t i = 0; i < wavs_.size(); ++i)
    EXPECT_EQ(run(*alone, {wavs_[i]}, 1000)[0], segmented[i]) << wavs_[i];
  EXPECT_EQ(run(*together, wavs_, 3000), segmented);
  const std::vector<std::string> limited =
      reference_with(model.dir, wavs_, "--max-symbols 1 --search beam --beam 4");
  EXPECT_NE(limited, plain) << "the limit must change the text for the test to tell";
  auto r = make_beam(model.bundle, 4, 8, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(run(*r, wavs_, 1600), limited);
}

// A TDT beam stream's text alone = in a batch of four beam streams = next to greedy streams.
TEST_F(NemoTransducerTest, TdtBeamTextDoesNotDependOnTheBatch) {
  const Model& model = models_[1];
  auto alone = make_beam(model.bundle, 4, 1);
  auto together = make_beam(model.bundle, 4, 8);
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
  // Greedy streams (the recognizer's default) around a beam stream in one batch.
  const std::vector<std::string> greedy = reference(model);
  ASSERT_NE(greedy[0], one_at_a_time[0]) << "beam and greedy agree: the test would not tell";
  auto mixed = make(model.bundle, 8);
  ASSERT_NE(mixed, nullptr);
  std::vector<stream::StreamOptions> options(3);
  options[1].decoder = stream::DecoderKind::kBeam;
  options[1].decoding.beam_width = 4;
  std::vector<std::string> got(3);
  model_test::feed_files_as_streams(*mixed, {wavs_[0], wavs_[0], wavs_[1]}, {1600, 1600, 1600},
                                    options,
                                    [&](std::size_t i, const stream::StreamResult& result) {
                                      if (result.result.is_final)
                                        got[i] += (got[i].empty() ? "" : "|") + result.result.text;
                                    });
  EXPECT_EQ(got, (std::vector<std::string>{greedy[0], one_at_a_time[0], greedy[1]}));
}

// Hotwords in the TDT beam search (the stream's context graph, bonus 1.5): the reference's text
// with the same phrase; each phrase changes the first clip's text, which then holds the phrase's
// pieces;
// a stream without hotwords next to one with them keeps the text it has alone.
TEST_F(NemoTransducerTest, TdtHotwordsInBeamSearch) {
  const Model& model = models_[1];
  const std::vector<std::string> plain = reference_with(model.dir, wavs_, "--search beam --beam 4");
  auto r = make_beam(model.bundle, 4, 8);
  ASSERT_NE(r, nullptr);
  for (const std::string phrase : {"H", "HE"}) {
    SCOPED_TRACE(phrase);
    const fs::path file = work_dir() / "tdt_hotwords.txt";
    std::ofstream(file) << phrase << "\n";
    const std::vector<std::string> want = reference_with(
        model.dir, wavs_, "--search beam --beam 4 --hotwords '" + file.string() + "'");
    ASSERT_EQ(want.size(), wavs_.size());
    EXPECT_NE(want[0], plain[0]) << "the phrase must change the text for the test to tell";
    // (A word that starts with the phrase holds its pieces: "H" is the one piece "\u2581H".)
    EXPECT_NE((" " + want[0]).find(" " + phrase), std::string::npos) << want[0];
    expect_hotword_texts(*r, wavs_, phrase, want, plain);
  }
}

// Hotwords in greedy search (bonus 1.5): a unit that extends a phrase competes with its bonus, as
// the reference's greedy search does it; each phrase changes the first clip's text (these random
// models' units are close, so the bonus wins often); a stream without hotwords next to one with
// them keeps the text it has alone. RNN-T and TDT.
TEST_F(NemoTransducerTest, GreedyHotwordsMatchTheReference) {
  for (const Model& model : models_) {
    SCOPED_TRACE(model.name);
    const std::vector<std::string> plain = reference(model);
    auto r = make(model.bundle, 8);
    ASSERT_NE(r, nullptr);
    for (const std::string phrase : {"HE", "B E"}) {
      SCOPED_TRACE(phrase);
      const fs::path file = work_dir() / "greedy_hotwords.txt";
      std::ofstream(file) << phrase << "\n";
      const std::vector<std::string> want =
          reference_with(model.dir, wavs_, "--hotwords '" + file.string() + "'");
      ASSERT_EQ(want.size(), wavs_.size());
      EXPECT_NE(want[0], plain[0]) << "the phrase must change the text for the test to tell";
      expect_hotword_texts(*r, wavs_, phrase, want, plain);
    }
  }
}

TEST_F(NemoTransducerTest, ImportErrorsNameTheFileAndWhatWasExpected) {
  const Model& model = models_[0];
  auto copy_without = [&](const std::string& name, const std::string& skip) {
    const fs::path dir = work_dir() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(model.dir))
      if (entry.path().filename() != skip)
        fs::copy_file(entry.path(), dir / entry.path().filename());
    return dir;
  };
  // tokens.txt whose last token is not the blank.
  const fs::path blank_first = copy_without("blank_first", "tokens.txt");
  {
    std::ifstream in(model.dir / "tokens.txt");
    std::vector<std::string> pieces;
    for (std::string line; std::getline(in, line);)
      pieces.push_back(line.substr(0, line.find(' ')));
    std::ofstream out(blank_first / "tokens.txt");
    out << pieces.back() << " 0\n";
    for (std::size_t i = 0; i + 1 < pieces.size(); ++i) out << pieces[i] << " " << i + 1 << "\n";
  }
  auto r = import_dir(blank_first, work_dir() / "blank_first.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("expected <blk>"), std::string::npos) << r.status().message();
  // One token fewer than the encoder's vocab_size + 1.
  const fs::path short_tokens = copy_without("short_tokens", "tokens.txt");
  {
    std::ifstream in(model.dir / "tokens.txt");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::ofstream out(short_tokens / "tokens.txt");
    for (std::size_t i = 1; i < lines.size(); ++i)
      out << lines[i].substr(0, lines[i].find(' ')) << " " << i - 1 << "\n";
  }
  r = import_dir(short_tokens, work_dir() / "short_tokens.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("metadata vocab_size 23"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("encoder.onnx"), std::string::npos) << r.status().message();
  // No tokens.txt: still the NeMo layout (the decoder says so), and the message says what is
  // missing.
  const fs::path no_tokens = copy_without("no_tokens", "tokens.txt");
  r = import_dir(no_tokens, work_dir() / "no_tokens.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("no tokens.txt (sherpa-onnx's NeMo export"),
            std::string::npos)
      << r.status().message();
  // NeMo's own export of an offline transducer (model_config.yaml, encoder-*.onnx without the
  // cache inputs, decoder_joint-*.onnx): refused by name, with the layout that is imported (a
  // cache-aware one is imported: models_nemo_cache_aware).
  const fs::path nemo_export = work_dir() / "nemo_export";
  fs::remove_all(nemo_export);
  fs::create_directories(nemo_export);
  fs::copy_file(model.dir / "encoder.onnx", nemo_export / "encoder-model.onnx");
  fs::copy_file(model.dir / "decoder.onnx", nemo_export / "decoder_joint-model.onnx");
  std::ofstream(nemo_export / "model_config.yaml")
      << "decoder:\n  _target_: nemo.collections.asr.modules.RNNTDecoder\n";
  r = import_dir(nemo_export, work_dir() / "nemo_export.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("without the encoder's cache inputs (an offline model) is "
                                      "not imported yet"),
            std::string::npos)
      << r.status().message();
  // A decoder whose states are not [pred_rnn_layers, N, pred_hidden]: the metadata says 3 layers.
  const fs::path wrong_layers = copy_without("wrong_layers", "encoder.onnx");
  const std::string edit =
      "/usr/bin/python3 -c \"import onnx,sys; m=onnx.load(sys.argv[1]); "
      "[setattr(p,'value','3') for p in m.metadata_props if p.key=='pred_rnn_layers']; "
      "onnx.save(m, sys.argv[2])\" '" +
      (model.dir / "encoder.onnx").string() + "' '" + (wrong_layers / "encoder.onnx").string() +
      "'";
  ASSERT_EQ(std::system(edit.c_str()), 0) << edit;
  r = import_dir(wrong_layers, work_dir() / "wrong_layers.bundle");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("then h and c [3, N, 32]"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("decoder.onnx"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace voxrt
