// NeMo's cache-aware streaming FastConformer-CTC in sherpa-onnx's layout, end to end
// (tests/models/nemo_cache_aware.py builds the NeMo architecture from code with random weights and
// exports it as sherpa-onnx's script does): `voxrt build --model-dir` imports it without
// hand-written metadata (family ctc_streaming, the caches and the pre-encode feature cache as
// state pairs); the streaming NeMo front end matches NeMo's features; one step of the engine
// matches onnxruntime on the exported graph (caches included); the Recognizer's streamed text is
// the Python reference's (NeMo's cache-aware streaming loop) for one stream, for streams of
// different lengths batched together and for any cut of the audio; the reference with broken
// (zeroed) caches says something else, so a broken cache fails these tests; import errors name
// the key or file. The same models in NeMo's own export layout (model.export() without metadata
// beside model_config.yaml and the tokenizer; the RNN-T's decoder_joint graph split in two) give
// the sherpa-onnx layout's contract and texts, which are the reference's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "audio/audio_io.h"
#include "audio/feature_extractor.h"
#include "audio/nemo_log_mel.h"
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
using model_test::import_dir;
using model_test::run_capture;
using model_test::write_wav;

fs::path source_dir() {
  return std::getenv("VOXRT_SOURCE_DIR") ? std::getenv("VOXRT_SOURCE_DIR") : ".";
}
fs::path work_dir() {
  return model_test::process_work_dir("voxrt_nemo_cache_aware_test");
}
std::string script() {
  return (source_dir() / "tests/models/nemo_cache_aware.py").string();
}

Status export_model(const fs::path& dir, const std::string& extra = "") {
  const std::string cmd = "/usr/bin/python3 '" + script() + "' export '" + dir.string() + "' " +
                          extra + " > '" + dir.string() + ".log' 2>&1";
  if (std::system(cmd.c_str()) != 0) return internal_error("export failed: ", cmd);
  return Status::ok();
}

class NemoCacheAwareTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(work_dir());
    fs::create_directories(work_dir());
    auto wavs = model_test::write_three_clips(source_dir(), work_dir());
    ASSERT_TRUE(wavs.has_value()) << wavs.status().to_string();
    wavs_ = *wavs;
    model_dir_ = work_dir() / "model";
    bundle_ = work_dir() / "model.bundle";
    ASSERT_TRUE(export_model(model_dir_).is_ok());
    auto imported = import_dir(model_dir_, bundle_);
    ASSERT_TRUE(imported.has_value()) << imported.status().to_string();
    EXPECT_EQ(imported->family, "ctc_streaming");
    EXPECT_EQ(imported->layout, "nemo-sherpa-onnx-cache-aware-ctc");
    for (const auto& note : imported->notes) std::cout << "  import: " << note << "\n";
    // The transducer (RNN-T) variant: encoder.onnx, decoder.onnx, joiner.onnx.
    rnnt_dir_ = work_dir() / "rnnt";
    rnnt_bundle_ = work_dir() / "rnnt.bundle";
    ASSERT_TRUE(export_model(rnnt_dir_, "--model rnnt").is_ok());
    auto rnnt = import_dir(rnnt_dir_, rnnt_bundle_);
    ASSERT_TRUE(rnnt.has_value()) << rnnt.status().to_string();
    EXPECT_EQ(rnnt->family, "transducer_stateful");
    EXPECT_EQ(rnnt->layout, "nemo-sherpa-onnx-cache-aware-transducer");
    for (const auto& note : rnnt->notes) std::cout << "  import: " << note << "\n";
    // The CTC model again (the same seed: the same weights) in NeMo's own export layout:
    // model.export()'s file without metadata beside model_config.yaml and the tokenizer.
    native_dir_ = work_dir() / "native";
    native_bundle_ = work_dir() / "native.bundle";
    ASSERT_TRUE(export_model(native_dir_, "--layout nemo").is_ok());
    auto native = import_dir(native_dir_, native_bundle_);
    ASSERT_TRUE(native.has_value()) << native.status().to_string();
    EXPECT_EQ(native->family, "ctc_streaming");
    EXPECT_EQ(native->layout, "nemo-export-cache-aware-ctc");
    for (const auto& note : native->notes) std::cout << "  import: " << note << "\n";
    // The transducer (same seed and weights as rnnt_dir_) in NeMo's own layout:
    // encoder-<file>.onnx and decoder_joint-<file>.onnx beside model_config.yaml.
    native_rnnt_dir_ = work_dir() / "native_rnnt";
    native_rnnt_bundle_ = work_dir() / "native_rnnt.bundle";
    ASSERT_TRUE(export_model(native_rnnt_dir_, "--layout nemo --model rnnt").is_ok());
    auto native_rnnt = import_dir(native_rnnt_dir_, native_rnnt_bundle_);
    ASSERT_TRUE(native_rnnt.has_value()) << native_rnnt.status().to_string();
    EXPECT_EQ(native_rnnt->family, "transducer_stateful");
    EXPECT_EQ(native_rnnt->layout, "nemo-export-cache-aware-transducer");
    for (const auto& note : native_rnnt->notes) std::cout << "  import: " << note << "\n";
  }

  static std::shared_ptr<stream::Recognizer> make(
      int max_batch, const fs::path& bundle = bundle_,
      stream::DecoderKind search = stream::DecoderKind::kGreedy) {
    stream::RecognizerConfig config;
    config.engine_path = bundle.string();
    config.decoder = search;
    config.beam.beam_width = 8;
    // NeMo's streaming loop has no endpoints: no rule may end an utterance (and reset the
    // stream's state) inside these clips.
    config.endpoint.rule1.min_trailing_silence_s = 1000.0;
    config.endpoint.rule2.min_trailing_silence_s = 1000.0;
    config.vad = stream::VadKind::kOff;
    config.max_batch = max_batch;
    config.max_streams = 8;
    auto r = stream::Recognizer::create(config);
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : nullptr;
  }

  static std::vector<std::string> reference(const std::string& extra = "",
                                            const fs::path& dir = model_dir_) {
    std::string cmd =
        "/usr/bin/python3 '" + script() + "' reference '" + dir.string() + "' " + extra;
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

  // One model exported in NeMo's own layout and in sherpa-onnx's: voxrt's texts for both equal
  // the reference's, one stream at a time fed in two piece sizes and the clips batched with two
  // ways of cutting them.
  static void expect_layouts_match_reference(const fs::path& native_dir, const fs::path& sherpa_dir,
                                             const fs::path& native_bundle,
                                             const fs::path& sherpa_bundle) {
    const std::vector<std::string> want = reference("", native_dir);
    ASSERT_EQ(want.size(), wavs_.size());
    EXPECT_EQ(want, reference("", sherpa_dir)) << "the two layouts' references must be one model's";
    for (const auto& w : want) EXPECT_FALSE(w.empty());
    auto native_one = make(1, native_bundle);
    auto sherpa_one = make(1, sherpa_bundle);
    ASSERT_NE(native_one, nullptr);
    ASSERT_NE(sherpa_one, nullptr);
    for (const std::size_t piece : {160u, 1600u}) {
      for (std::size_t i = 0; i < wavs_.size(); ++i) {
        const auto native = model_test::final_texts_of_streams(*native_one, {wavs_[i]}, {piece});
        const auto sherpa = model_test::final_texts_of_streams(*sherpa_one, {wavs_[i]}, {piece});
        EXPECT_EQ(native[0], want[i]) << wavs_[i] << " fed " << piece << " samples at a time";
        EXPECT_EQ(native[0], sherpa[0]) << wavs_[i] << " fed " << piece << " samples at a time";
      }
    }
    auto native_batched = make(3, native_bundle);
    auto sherpa_batched = make(3, sherpa_bundle);
    ASSERT_NE(native_batched, nullptr);
    ASSERT_NE(sherpa_batched, nullptr);
    for (const auto& cut :
         std::vector<std::vector<std::size_t>>{{160, 160, 160}, {37, 5000, 999}}) {
      SCOPED_TRACE(::testing::PrintToString(cut));
      const auto native = model_test::final_texts_of_streams(*native_batched, wavs_, cut);
      const auto sherpa = model_test::final_texts_of_streams(*sherpa_batched, wavs_, cut);
      EXPECT_EQ(native, want);
      EXPECT_EQ(native, sherpa);
    }
  }

  static inline std::vector<std::string> wavs_;
  static inline fs::path model_dir_;
  static inline fs::path bundle_;
  static inline fs::path rnnt_dir_;
  static inline fs::path rnnt_bundle_;
  static inline fs::path native_dir_;
  static inline fs::path native_bundle_;
  static inline fs::path native_rnnt_dir_;
  static inline fs::path native_rnnt_bundle_;
};

TEST_F(NemoCacheAwareTest, BundleHoldsTheStreamingContract) {
  nlohmann::json manifest;
  std::ifstream(bundle_ / "bundle.json") >> manifest;
  const auto& m = manifest["metadata"];
  EXPECT_EQ(manifest["family"], "ctc_streaming");
  EXPECT_EQ(m["voxrt.feature.type"], "nemo_log_mel");
  EXPECT_EQ(m["voxrt.feature.num_bins"], "80");
  // window_size 41 = 9 pre-encode cache frames + chunk_shift 32.
  EXPECT_EQ(m["voxrt.chunk_frames"], "32");
  EXPECT_EQ(m["voxrt.shift_frames"], "32");
  EXPECT_EQ(m["voxrt.subsampling"], "8");
  EXPECT_EQ(m["voxrt.blank_id"], "23");
  EXPECT_EQ(m["voxrt.ctc.length_input"], "chunk_length");
  EXPECT_EQ(m["voxrt.state_pairs"],
            "pre_encode_cache:pre_encode_cache_next,cache_last_channel:cache_last_channel_next,"
            "cache_last_time:cache_last_time_next,cache_last_channel_len:cache_last_channel_next_"
            "len");
}

// The streaming front end (nemo_log_mel: pre-emphasis over the stream, centred zero-padded
// frames) against NeMo's FilterbankFeatures over the whole file, fed in odd-sized pieces.
TEST_F(NemoCacheAwareTest, FrontEndMatchesNemo) {
  const audio::FeatureConfig config = audio::nemo_log_mel_feature_config(80);
  for (const std::string& wav : wavs_) {
    const fs::path out = work_dir() / "features.bin";
    const std::string cmd = "/usr/bin/python3 '" + script() + "' frontend '" + model_dir_.string() +
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
    auto extractor = audio::StreamingFeatureExtractor::create(config);
    ASSERT_TRUE(extractor.has_value()) << extractor.status().to_string();
    for (std::size_t at = 0; at < clip->samples.size(); at += 777) {
      const std::size_t n = std::min<std::size_t>(777, clip->samples.size() - at);
      extractor->accept_waveform(std::span<const float>(clip->samples.data() + at, n));
    }
    extractor->input_finished();
    std::vector<float> got;  // frames x bins
    extractor->pop_frames(got, extractor->frames_ready());
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), static_cast<std::int64_t>(want.size()))
        << wav << ": " << dims[1] << " frames expected";
    float worst = 0.0f;
    for (int bin = 0; bin < dims[0]; ++bin) {
      for (int f = 0; f < dims[1]; ++f) {
        const float w = want[static_cast<std::size_t>(bin) * dims[1] + f];
        const float g = got[static_cast<std::size_t>(f) * dims[0] + bin];
        worst = std::max(worst, std::abs(w - g) / std::max(1.0f, std::abs(w)));
      }
    }
    std::cout << "  " << fs::path(wav).filename().string() << ": " << dims[1]
              << " frames, max |diff| / max(1, |value|) " << worst << "\n";
    EXPECT_LT(worst, 1e-4f) << wav;
  }
}

// One step of the engine against onnxruntime on the exported graph: three rows with random
// windows, lengths (a full chunk, a part, a chunk with 3 frames of audio) and caches (the
// last-channel cache partly filled), every output compared, the caches' next values included.
// `output`: the first output (logprobs, or the encoder's outputs, which the engine gives as
// frames: `channels_first` in the export).
void step_matches_onnxruntime(const fs::path& onnx, const fs::path& engine_file,
                              const std::string& output, bool channels_first) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](Dims dims, float scale, float offset) {
    Tensor t = Tensor::uninitialized(DType::kF32, dims);
    for (std::int64_t i = 0; i < t.element_count(); ++i)
      t.data<float>()[i] = offset + scale * normal(rng);
    return t;
  };
  constexpr int kRows = 3, kMels = 80, kPre = 9, kChunk = 32;
  const Tensor signal = random({kRows, kMels, kPre + kChunk}, 3.0f, -8.0f);
  const Tensor channel = random({kRows, 2, 12, 32}, 1.0f, 0.0f);
  const Tensor time = random({kRows, 2, 32, 8}, 1.0f, 0.0f);
  const Tensor channel_len = Tensor::from_vector<std::int64_t>({kRows}, {0, 5, 12});
  const std::vector<std::int64_t> lengths = {kPre + kChunk, kPre + 20, kPre + 3};
  auto expected = ort::run_onnxruntime(
      onnx.string(),
      {"audio_signal", "length", "cache_last_channel", "cache_last_time", "cache_last_channel_len"},
      {signal, Tensor::from_vector<std::int64_t>({kRows}, lengths), channel, time, channel_len},
      {output, "cache_last_channel_next", "cache_last_time_next", "cache_last_channel_next_len"});
  ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
  // The engine's inputs: the window's last 32 frames as features and its first 9 as the
  // pre-encode cache, [B, T, n_mels]; the chunk's audio frames as chunk_length.
  Tensor features = Tensor::uninitialized(DType::kF32, {kRows, kChunk, kMels});
  Tensor pre = Tensor::uninitialized(DType::kF32, {kRows, kPre, kMels});
  for (int b = 0; b < kRows; ++b) {
    for (int m = 0; m < kMels; ++m) {
      for (int t = 0; t < kPre + kChunk; ++t) {
        const float v = signal.data<float>()[(b * kMels + m) * (kPre + kChunk) + t];
        if (t < kPre)
          pre.data<float>()[(b * kPre + t) * kMels + m] = v;
        else
          features.data<float>()[(b * kChunk + t - kPre) * kMels + m] = v;
      }
    }
  }
  std::map<std::string, Tensor> by_name = {
      {"features", features},
      {"pre_encode_cache", pre},
      {"chunk_length", Tensor::from_vector<std::int64_t>(
                           {kRows}, {lengths[0] - kPre, lengths[1] - kPre, lengths[2] - kPre})},
      {"cache_last_channel", channel},
      {"cache_last_time", time},
      {"cache_last_channel_len", channel_len}};
  auto engine = Engine::load_file(engine_file.string());
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  auto context = (*engine)->create_context();
  ASSERT_TRUE(context.has_value());
  std::vector<Tensor> inputs;
  for (const auto& info : (*engine)->inputs()) {
    ASSERT_TRUE(by_name.count(info.name)) << "unexpected engine input " << info.name;
    inputs.push_back(by_name.at(info.name));
  }
  auto got = (*context)->run(inputs);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  const std::vector<std::string> compared = {output, "cache_last_channel_next",
                                             "cache_last_time_next", "cache_last_channel_next_len"};
  for (std::size_t k = 0; k < compared.size(); ++k) {
    int index = -1;
    for (std::size_t o = 0; o < (*engine)->outputs().size(); ++o)
      if ((*engine)->outputs()[o].name == compared[k]) index = static_cast<int>(o);
    ASSERT_GE(index, 0) << compared[k];
    const Tensor& want = expected->outputs[k];
    const Tensor& have = (*got)[static_cast<std::size_t>(index)];
    const bool transposed = k == 0 && channels_first;
    Dims want_dims = want.dims();
    if (transposed) std::swap(want_dims[1], want_dims[2]);
    ASSERT_EQ(have.dims(), want_dims) << compared[k];
    double worst = 0.0;
    for (std::int64_t i = 0; i < want.element_count(); ++i) {
      std::int64_t j = i;
      if (transposed) {  // want [B, D, T] at i -> have [B, T, D]
        const std::int64_t d_size = want.dim(1), t_size = want.dim(2);
        const std::int64_t b = i / (d_size * t_size), d = i / t_size % d_size, t = i % t_size;
        j = (b * t_size + t) * d_size + d;
      }
      const double w = want.dtype() == DType::kI64
                           ? static_cast<double>(want.data<std::int64_t>()[i])
                           : want.data<float>()[i];
      const double h = have.dtype() == DType::kI64
                           ? static_cast<double>(have.data<std::int64_t>()[j])
                           : have.data<float>()[j];
      worst = std::max(worst, std::abs(w - h));
    }
    std::cout << "  " << compared[k] << " " << dims_to_string(want.dims())
              << ": max |diff| vs onnxruntime " << worst << "\n";
    EXPECT_LT(worst, 1e-3) << compared[k];
  }
}

TEST_F(NemoCacheAwareTest, EngineStepMatchesOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  step_matches_onnxruntime(model_dir_ / "model.onnx", bundle_ / "model.engine", "logprobs", false);
}

// The transducer's encoder.onnx: its outputs [B, D, T'] are the engine's frames [B, T', D].
TEST_F(NemoCacheAwareTest, TransducerEncoderStepMatchesOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  step_matches_onnxruntime(rnnt_dir_ / "encoder.onnx", rnnt_bundle_ / "encoder.engine", "outputs",
                           true);
}

// Each clip as one stream: the text is the reference's (NeMo's streaming loop), which must say
// something for the comparison to mean anything.
TEST_F(NemoCacheAwareTest, OneStreamMatchesReference) {
  const std::vector<std::string> want = reference();
  ASSERT_EQ(want.size(), wavs_.size());
  for (const auto& w : want) EXPECT_FALSE(w.empty());
  auto r = make(1);
  ASSERT_NE(r, nullptr);
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    const auto got = model_test::final_texts_of_streams(*r, {wavs_[i]}, {1600});
    EXPECT_EQ(got[0], want[i]) << wavs_[i];
  }
}

// The three clips (different lengths) as concurrent streams in one batch, with several ways of
// cutting the audio (the same pieces for all, different pieces per stream): every stream's text
// is its reference's.
TEST_F(NemoCacheAwareTest, BatchedStreamsAndAnyCutMatchReference) {
  const std::vector<std::string> want = reference();
  auto r = make(3);
  ASSERT_NE(r, nullptr);
  const std::vector<std::vector<std::size_t>> cuts = {
      {160, 160, 160}, {1600, 1600, 1600}, {37, 5000, 999}, {100000, 320, 4321}};
  for (const auto& cut : cuts) {
    SCOPED_TRACE(::testing::PrintToString(cut));
    const auto got = model_test::final_texts_of_streams(*r, wavs_, cut);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << wavs_[i];
  }
}

// The CTC prefix beam search (width 8, no LM) over the streamed log-probs = the reference's prefix
// beam search (nemo_ctc.py's, voxrt's default pruning) over NeMo's streaming loop, batched.
TEST_F(NemoCacheAwareTest, BeamSearchMatchesReference) {
  const std::vector<std::string> want = reference("--search beam --beam 8");
  auto r = make(3, bundle_, stream::DecoderKind::kBeam);
  ASSERT_NE(r, nullptr);
  const auto got = model_test::final_texts_of_streams(*r, wavs_, {1600, 333, 4000});
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << wavs_[i];
  const std::vector<std::string> greedy = reference();
  int differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += want[i] != greedy[i] ? 1 : 0;
  std::cout << "  beam texts that differ from greedy's: " << differ << " of " << want.size()
            << "\n";
}

// A broken cache would be seen: the reference with every step started from zero caches says
// something else for the clips (so voxrt's texts, equal to the reference's above, depend on the
// caches being carried).
TEST_F(NemoCacheAwareTest, BrokenCachesChangeTheText) {
  const std::vector<std::string> carried = reference();
  const std::vector<std::string> zeroed = reference("--zero-caches");
  ASSERT_EQ(carried.size(), zeroed.size());
  int differ = 0;
  for (std::size_t i = 0; i < carried.size(); ++i) differ += carried[i] != zeroed[i] ? 1 : 0;
  EXPECT_GE(differ, 2) << "zeroed caches must change the text of the longer clips";
}

// The transducer variant (encoder with NeMo's caches, NeMo's LSTM prediction network and joint,
// family transducer_stateful): each clip alone and the three batched with different cuts give the
// reference's text (NeMo's greedy RNN-T over the streamed encoder frames, the prediction
// network's state carried across chunks), and zeroed caches change the reference's text.
TEST_F(NemoCacheAwareTest, TransducerMatchesReference) {
  const std::vector<std::string> want = reference("", rnnt_dir_);
  ASSERT_EQ(want.size(), wavs_.size());
  for (const auto& w : want) EXPECT_FALSE(w.empty());
  auto alone = make(1, rnnt_bundle_);
  ASSERT_NE(alone, nullptr);
  for (std::size_t i = 0; i < wavs_.size(); ++i) {
    const auto got = model_test::final_texts_of_streams(*alone, {wavs_[i]}, {1600});
    EXPECT_EQ(got[0], want[i]) << wavs_[i];
  }
  auto batched = make(3, rnnt_bundle_);
  ASSERT_NE(batched, nullptr);
  for (const auto& cut : std::vector<std::vector<std::size_t>>{{160, 160, 160}, {37, 5000, 999}}) {
    SCOPED_TRACE(::testing::PrintToString(cut));
    const auto got = model_test::final_texts_of_streams(*batched, wavs_, cut);
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << wavs_[i];
  }
  const std::vector<std::string> zeroed = reference("--zero-caches", rnnt_dir_);
  int differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += want[i] != zeroed[i] ? 1 : 0;
  EXPECT_GE(differ, 2) << "zeroed caches must change the text of the longer clips";
}

// Import errors name the key or the file and say what was expected.
TEST_F(NemoCacheAwareTest, ImportErrorsNameTheKey) {
  const fs::path no_window = work_dir() / "no_window";
  ASSERT_TRUE(export_model(no_window, "--drop-key window_size").is_ok());
  auto a = import_dir(no_window, work_dir() / "no_window.bundle");
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.status().message().find("'window_size'"), std::string::npos)
      << a.status().to_string();
  // tokens.txt one short of vocab_size + 1.
  const fs::path short_tokens = work_dir() / "short_tokens";
  fs::remove_all(short_tokens);
  fs::copy(model_dir_, short_tokens);
  {
    std::ifstream in(model_dir_ / "tokens.txt");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::ofstream out(short_tokens / "tokens.txt");
    for (std::size_t i = 1; i < lines.size(); ++i)
      out << lines[i].substr(0, lines[i].rfind(' ')) << " " << i - 1 << "\n";
  }
  auto b = import_dir(short_tokens, work_dir() / "short_tokens.bundle");
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.status().message().find("expected vocab_size + 1"), std::string::npos)
      << b.status().to_string();
}

// ---- NeMo's own export layout (model_config.yaml, no metadata) --------------------------------

// The sizes read from model_config.yaml give the bundle sherpa-onnx's metadata gives: every
// contract key is equal (the vocabulary too: tokenizer.vocab's pieces are tokens.txt's).
TEST_F(NemoCacheAwareTest, NativeLayoutBuildsTheSherpaLayoutsContract) {
  nlohmann::json native, sherpa;
  std::ifstream(native_bundle_ / "bundle.json") >> native;
  std::ifstream(bundle_ / "bundle.json") >> sherpa;
  EXPECT_EQ(native["family"], sherpa["family"]);
  EXPECT_EQ(native["metadata"], sherpa["metadata"]);
  EXPECT_EQ(native["source"]["layout"], "nemo-export-cache-aware-ctc");
  EXPECT_EQ(native["source"]["model"], "fastconformer_streaming_ctc.onnx");
}

// One step of the native layout's engine against onnxruntime on NeMo's file: the caches' axes
// (cache sizes taken from the config, not the graph) carry the values onnxruntime's do.
TEST_F(NemoCacheAwareTest, NativeEngineStepMatchesOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  step_matches_onnxruntime(native_dir_ / "fastconformer_streaming_ctc.onnx",
                           native_bundle_ / "model.engine", "logprobs", false);
}

// The native layout's texts = the sherpa-onnx layout's = the reference's (NeMo's streaming loop
// over the same weights): one stream at a time fed in two chunk sizes, and the three clips as
// concurrent streams in one batch with two ways of cutting them.
TEST_F(NemoCacheAwareTest, NativeLayoutMatchesSherpaLayoutAndReference) {
  expect_layouts_match_reference(native_dir_, model_dir_, native_bundle_, bundle_);
}

// A config that disagrees with the graph, or a model that is not cache-aware, is refused with
// the key, the expected and the found value.
TEST_F(NemoCacheAwareTest, NativeImportErrorsNameTheKey) {
  struct Case {
    std::string override;
    std::string message;
  };
  const std::vector<Case> cases = {
      // The graph's static layers axis of cache_last_channel is 2.
      {"n_layers=3", "cache_last_channel"},
      {"d_model=64", "on axis 3 but"},
      {"conv_context_size=null", "encoder.conv_context_size"},
      {"att_context_style=regular", "att_context_style 'regular'"},
      {"causal_downsampling=false", "encoder.causal_downsampling"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.override);
    const fs::path dir = work_dir() / ("native_error_" + std::to_string(n++));
    ASSERT_TRUE(export_model(dir, "--layout nemo --config-override " + c.override).is_ok());
    auto got = import_dir(dir, dir.string() + ".bundle");
    ASSERT_FALSE(got.has_value());
    EXPECT_NE(got.status().message().find(c.message), std::string::npos)
        << got.status().to_string();
    EXPECT_NE(got.status().message().find("model_config.yaml"), std::string::npos)
        << got.status().to_string();
  }
  // Caches exported layer-first ([layers, B, ...]: the module's layout inside, not NeMo's export)
  // are refused naming the axis, not misread as [B, layers, ...] (which built without this check,
  // with --max-batch 2, and failed only when recognising, in a Gather).
  {
    const fs::path dir = work_dir() / "native_layer_first";
    ASSERT_TRUE(export_model(dir, "--layout nemo --layer-first-caches").is_ok());
    auto got = import_dir(dir, dir.string() + ".bundle");
    ASSERT_FALSE(got.has_value());
    EXPECT_NE(got.status().message().find("cache_last_channel is 2x"), std::string::npos)
        << got.status().to_string();
    EXPECT_NE(got.status().message().find("found axis 0 static and axis 1 dynamic"),
              std::string::npos)
        << got.status().to_string();
  }
  // Without the tokenizer's text vocabulary the SentencePiece model's pieces are read (the same
  // units: the same contract); without either, the error names the folder and what was looked for.
  const fs::path no_vocab = work_dir() / "native_no_vocab";
  fs::remove_all(no_vocab);
  fs::copy(native_dir_, no_vocab);
  for (const auto& entry : fs::directory_iterator(no_vocab))
    if (entry.path().string().ends_with("tokenizer.vocab")) fs::remove(entry.path());
  auto from_model = import_dir(no_vocab, work_dir() / "native_no_vocab.bundle");
  ASSERT_TRUE(from_model.has_value()) << from_model.status().to_string();
  nlohmann::json with_vocab, without_vocab;
  std::ifstream(native_bundle_ / "bundle.json") >> with_vocab;
  std::ifstream(work_dir() / "native_no_vocab.bundle" / "bundle.json") >> without_vocab;
  EXPECT_EQ(without_vocab["metadata"], with_vocab["metadata"]);
  EXPECT_TRUE(
      without_vocab["source"]["vocabulary"].get<std::string>().ends_with("tokenizer.model"));
  for (const auto& entry : fs::directory_iterator(no_vocab))
    if (entry.path().string().ends_with("tokenizer.model")) fs::remove(entry.path());
  auto got = import_dir(no_vocab, work_dir() / "native_no_vocab.bundle");
  ASSERT_FALSE(got.has_value());
  EXPECT_NE(got.status().message().find("*tokenizer.vocab"), std::string::npos)
      << got.status().to_string();
  EXPECT_NE(got.status().message().find("*tokenizer.model"), std::string::npos)
      << got.status().to_string();
}

// The native transducer's encoder engine against onnxruntime on NeMo's encoder file.
TEST_F(NemoCacheAwareTest, NativeTransducerEncoderStepMatchesOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  step_matches_onnxruntime(native_rnnt_dir_ / "encoder-fastconformer_streaming_rnnt.onnx",
                           native_rnnt_bundle_ / "encoder.engine", "outputs", true);
}

// decoder_joint split in two: the decoder engine then the joiner engine on random rows (encoder
// frames, units, LSTM states) give onnxruntime's joint logits and next states for the whole
// decoder_joint graph.
TEST_F(NemoCacheAwareTest, NativeDecoderJointSplitMatchesOnnxruntime) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  constexpr int kRows = 3, kDim = 32, kLayers = 2, kHidden = 32;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](Dims dims) {
    Tensor t = Tensor::uninitialized(DType::kF32, dims);
    for (std::int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = normal(rng);
    return t;
  };
  const Tensor frames = random({kRows, kDim, 1});  // [B, D, T = 1]: the same values as [B, 1, D]
  const Tensor targets = Tensor::from_vector<std::int32_t>({kRows, 1}, {23, 4, 17});
  const Tensor lengths = Tensor::from_vector<std::int32_t>({kRows}, {1, 1, 1});
  const Tensor h = random({kLayers, kRows, kHidden});
  const Tensor c = random({kLayers, kRows, kHidden});
  auto expected = ort::run_onnxruntime(
      (native_rnnt_dir_ / "decoder_joint-fastconformer_streaming_rnnt.onnx").string(),
      {"encoder_outputs", "targets", "target_length", "input_states_1", "input_states_2"},
      {frames, targets, lengths, h, c}, {"outputs", "output_states_1", "output_states_2"});
  ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
  auto run = [](const fs::path& file, const std::map<std::string, Tensor>& by_name) {
    auto engine = Engine::load_file(file.string());
    EXPECT_TRUE(engine.has_value()) << engine.status().to_string();
    auto context = (*engine)->create_context();
    std::vector<Tensor> inputs;
    for (const auto& info : (*engine)->inputs()) inputs.push_back(by_name.at(info.name));
    auto out = (*context)->run(inputs);
    EXPECT_TRUE(out.has_value()) << out.status().to_string();
    std::map<std::string, Tensor> named;
    for (std::size_t o = 0; o < (*engine)->outputs().size(); ++o)
      named[(*engine)->outputs()[o].name] = (*out)[o];
    return named;
  };
  auto decoded = run(native_rnnt_bundle_ / "decoder.engine", {{"targets", targets},
                                                              {"target_length", lengths},
                                                              {"input_states_1", h},
                                                              {"input_states_2", c}});
  ASSERT_TRUE(decoded.count("decoder_outputs"));
  auto frames_last = frames.reshaped({kRows, 1, kDim});
  ASSERT_TRUE(frames_last.has_value());
  auto joined =
      run(native_rnnt_bundle_ / "joiner.engine",
          {{"encoder_outputs", *frames_last}, {"decoder_outputs", decoded.at("decoder_outputs")}});
  const std::vector<std::pair<std::string, Tensor>> have = {
      {"outputs", joined.at("outputs")},
      {"output_states_1", decoded.at("output_states_1")},
      {"output_states_2", decoded.at("output_states_2")}};
  for (std::size_t k = 0; k < have.size(); ++k) {
    const Tensor& want = expected->outputs[k];
    const Tensor& got = have[k].second;
    ASSERT_EQ(got.element_count(), want.element_count()) << have[k].first;
    double worst = 0.0;
    for (std::int64_t i = 0; i < want.element_count(); ++i)
      worst = std::max(worst,
                       static_cast<double>(std::abs(want.data<float>()[i] - got.data<float>()[i])));
    std::cout << "  " << have[k].first << " " << dims_to_string(want.dims())
              << ": max |diff| vs onnxruntime " << worst << "\n";
    EXPECT_LT(worst, 1e-4) << have[k].first;
  }
}

// The native transducer's texts = the sherpa-onnx layout's = the reference's (NeMo's greedy RNN-T
// over the streamed encoder): one stream fed in two chunk sizes, three batched with two cuts.
TEST_F(NemoCacheAwareTest, NativeTransducerMatchesSherpaLayoutAndReference) {
  expect_layouts_match_reference(native_rnnt_dir_, rnnt_dir_, native_rnnt_bundle_, rnnt_bundle_);
}

// The native transducer's errors name the file or key: a decoder_joint file that is not
// RNNTDecoderJoint's (sherpa-onnx's decoder.onnx under that name), a config whose prediction
// network disagrees with the graph's states, a config without decoder.prednet.pred_rnn_layers.
TEST_F(NemoCacheAwareTest, NativeTransducerImportErrorsNameTheFileOrKey) {
  const std::string joint_file = "decoder_joint-fastconformer_streaming_rnnt.onnx";
  auto variant = [&](const std::string& name, const std::string& from, const std::string& to) {
    const fs::path dir = work_dir() / name;
    fs::remove_all(dir);
    fs::copy(native_rnnt_dir_, dir);
    std::ifstream in(dir / "model_config.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string config = text.str();
    if (!from.empty()) {
      const auto at = config.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      config.replace(at, from.size(), to);
    }
    std::ofstream(dir / "model_config.yaml") << config;
    return dir;
  };
  const fs::path not_joint = variant("native_rnnt_not_joint", "", "");
  fs::copy_file(rnnt_dir_ / "decoder.onnx", not_joint / joint_file,
                fs::copy_options::overwrite_existing);
  auto a = import_dir(not_joint, not_joint.string() + ".bundle");
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.status().message().find(joint_file + ": expected NeMo's decoder_joint export"),
            std::string::npos)
      << a.status().to_string();
  EXPECT_NE(a.status().message().find("found inputs targets"), std::string::npos)
      << a.status().to_string();
  const fs::path wide = variant("native_rnnt_wide", "pred_hidden: 32", "pred_hidden: 64");
  auto b = import_dir(wide, wide.string() + ".bundle");
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.status().message().find(joint_file), std::string::npos) << b.status().to_string();
  EXPECT_NE(b.status().message().find("[2, N, 64]"), std::string::npos) << b.status().to_string();
  const fs::path no_layers = variant("native_rnnt_no_layers", "pred_rnn_layers: 2", "");
  auto c = import_dir(no_layers, no_layers.string() + ".bundle");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.status().message().find("expected decoder.prednet.pred_rnn_layers"),
            std::string::npos)
      << c.status().to_string();
}

}  // namespace
}  // namespace voxrt
