// Transformer-era models exported from code at test time (export_transformer_models.py, random
// weights, each exporter's conventions) against onnxruntime, rtol 1e-4 / atol 1e-5: torchaudio's
// Conformer, Emformer and Emformer RNN-T, wav2vec2 and HuBERT, Whisper as optimum exports it
// (encoder, decoder, decoder with past), an icefall-style streaming Conformer (its chunks carried
// through the caches equal the whole utterance) and a NeMo-style Conformer. Results must not
// depend on the batch a stream shares.
#include "ort_compare.h"

namespace voxrt {
namespace {
using namespace model_test;

class TransformerModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    exported_ = export_models("export_transformer_models.py", exported_dir());
  }
  static fs::path exported_dir() { return binary_dir() / "tests/models/transformer"; }
  static fs::path exported(const std::string& name) { return exported_dir() / name; }
  void SetUp() override {
    ASSERT_TRUE(exported_) << "export failed: see " << (exported_dir() / "export.log");
  }
  static inline bool exported_ = false;
};

// Row `row` of the leading (batch) dim of `t`.
Tensor batch_row(const Tensor& t, std::int64_t row) {
  Dims dims = t.dims();
  const std::int64_t per_row = t.element_count() / dims[0];
  dims[0] = 1;
  Tensor out = Tensor::uninitialized(t.dtype(), dims);
  const std::size_t bytes = static_cast<std::size_t>(per_row) * dtype_size_bytes(t.dtype());
  std::memcpy(out.raw_data(), static_cast<const std::uint8_t*>(t.raw_data()) + row * bytes, bytes);
  return out;
}

// Runs the engine on a batch of streams and on each stream alone: every output row must equal
// the stream's own run (batch on dim 0 of every input and output).
void expect_batch_independent(const fs::path& model, const std::vector<Input>& batch) {
  BuilderConfig config;
  config.profiles.push_back(profile_of(batch, 1));
  auto engine = build_engine(model, config);
  ASSERT_TRUE(engine);
  auto context = engine->create_context(1);
  ASSERT_TRUE(context.has_value());
  auto together = (*context)->run(engine_inputs(*engine, batch));
  ASSERT_TRUE(together.has_value()) << together.status().to_string();
  const std::int64_t streams = batch[0].value.dim(0);
  for (std::int64_t s = 0; s < streams; ++s) {
    std::vector<Input> alone;
    for (const Input& in : batch) alone.push_back({in.name, batch_row(in.value, s)});
    auto single = (*context)->run(engine_inputs(*engine, alone));
    ASSERT_TRUE(single.has_value()) << single.status().to_string();
    for (std::size_t o = 0; o < single->size(); ++o) {
      EXPECT_TRUE(all_close(batch_row((*together)[o], s), (*single)[o], 1e-4, 1e-5,
                            model.filename().string() + " output " + std::to_string(o) +
                                " of stream " + std::to_string(s)));
    }
  }
}

TEST_F(TransformerModels, TorchaudioConformer) {
  std::mt19937 rng(11);
  expect_matches_onnxruntime(
      exported("ta_conformer.onnx"), {},
      {{"input", random_f32({2, 30, 80}, rng)}, {"lengths", i64_tensor({2}, {30, 22})}});
}

TEST_F(TransformerModels, TorchaudioEmformer) {
  std::mt19937 rng(12);
  expect_matches_onnxruntime(
      exported("emformer.onnx"), {},
      {{"input", random_f32({2, 18, 64}, rng)}, {"lengths", i64_tensor({2}, {18, 14})}});
}

TEST_F(TransformerModels, TorchaudioRnntTranscriberPredictorJoiner) {
  std::mt19937 rng(13);
  expect_matches_onnxruntime(
      exported("rnnt_transcriber.onnx"), {},
      {{"input", random_f32({2, 18, 40}, rng)}, {"lengths", i64_tensor({2}, {18, 12})}});
  expect_matches_onnxruntime(exported("rnnt_predictor.onnx"), {},
                             {{"targets", i64_tensor({1, 1}, {7})},
                              {"target_lengths", i64_tensor({1}, {1})},
                              {"h0", random_f32({1, 32}, rng)},
                              {"c0", random_f32({1, 32}, rng)},
                              {"h1", random_f32({1, 32}, rng)},
                              {"c1", random_f32({1, 32}, rng)}});
  expect_matches_onnxruntime(
      exported("rnnt_joiner.onnx"), {},
      {{"source", random_f32({1, 5, 32}, rng)}, {"target", random_f32({1, 3, 32}, rng)}});
}

TEST_F(TransformerModels, Wav2Vec2AndHubert) {
  std::mt19937 rng(14);
  const std::vector<Input> inputs{{"waveforms", random_f32({2, 1600}, rng)}};
  expect_matches_onnxruntime(exported("wav2vec2.onnx"), {}, inputs);
  expect_matches_onnxruntime(exported("hubert.onnx"), {}, inputs);
  expect_batch_independent(exported("wav2vec2.onnx"), inputs);
}

std::vector<Input> whisper_past(std::mt19937& rng, std::int64_t batch, std::int64_t past) {
  std::vector<Input> inputs;
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* side : {"decoder", "encoder"}) {
      for (const char* kv : {"key", "value"}) {
        const std::int64_t length = std::string(side) == "decoder" ? past : 20;
        inputs.push_back({"past_key_values." + std::to_string(layer) + "." + side + "." + kv,
                          random_f32({batch, 4, length, 16}, rng)});
      }
    }
  }
  return inputs;
}

TEST_F(TransformerModels, WhisperAsOptimumExportsIt) {
  std::mt19937 rng(15);
  expect_matches_onnxruntime(exported("whisper_encoder_model.onnx"), {},
                             {{"input_features", random_f32({1, 16, 40}, rng)}});
  expect_matches_onnxruntime(exported("whisper_decoder_model.onnx"), {},
                             {{"input_ids", i64_tensor({1, 4}, {1, 50, 7, 99})},
                              {"encoder_hidden_states", random_f32({1, 20, 64}, rng)}});
  std::vector<Input> step = whisper_past(rng, 1, 5);
  step.insert(step.begin(), {"input_ids", i64_tensor({1, 1}, {42})});
  expect_matches_onnxruntime(exported("whisper_decoder_with_past_model.onnx"), {}, step);
  std::vector<Input> batch = whisper_past(rng, 3, 5);
  batch.insert(batch.begin(), {"input_ids", i64_tensor({3, 1}, {42, 3, 77})});
  expect_batch_independent(exported("whisper_decoder_with_past_model.onnx"), batch);
}

TEST_F(TransformerModels, NemoConformer) {
  std::mt19937 rng(16);
  expect_matches_onnxruntime(
      exported("nemo_conformer.onnx"), {},
      {{"audio_signal", random_f32({2, 40, 64}, rng)}, {"length", i64_tensor({2}, {64, 50})}});
  expect_batch_independent(
      exported("nemo_conformer.onnx"),
      {{"audio_signal", random_f32({2, 40, 64}, rng)}, {"length", i64_tensor({2}, {64, 64})}});
}

// The icefall-style streaming encoder: chunk 8, left context 16, 2 layers of 64, kernel 15.
constexpr std::int64_t kChunk = 8, kLeft = 16, kModel = 64, kConvCache = 14, kLayers = 2;

std::vector<Input> streaming_states(std::mt19937* rng, std::int64_t processed) {
  std::vector<Input> states;
  auto state = [&](Dims dims) {
    return rng ? random_f32(std::move(dims), *rng, 0.5f) : Tensor::zeros(DType::kF32, dims);
  };
  for (std::int64_t i = 0; i < kLayers; ++i) {
    const std::string n = std::to_string(i);
    states.push_back({"cached_key_" + n, state({kLeft, 1, kModel})});
    states.push_back({"cached_val_" + n, state({kLeft, 1, kModel})});
    states.push_back({"cached_conv_" + n, state({1, kModel, kConvCache})});
  }
  states.push_back({"processed_lens", i64_tensor({1}, {processed})});
  return states;
}

TEST_F(TransformerModels, IcefallStreamingConformerChunk) {
  std::mt19937 rng(17);
  std::vector<Input> inputs = streaming_states(&rng, 8);  // half of the cache filled
  inputs.insert(inputs.begin(), {"x", random_f32({1, kChunk, 40}, rng)});
  expect_matches_onnxruntime(exported("icefall_conformer_streaming.onnx"), {}, inputs);
}

TEST_F(TransformerModels, IcefallStreamingChunksEqualTheWholeUtterance) {
  std::mt19937 rng(18);
  const std::int64_t chunks = 4;
  Tensor utterance = random_f32({1, chunks * kChunk, 40}, rng);
  std::vector<Tensor> whole;
  expect_matches_onnxruntime(exported("icefall_conformer_whole.onnx"), {}, {{"x", utterance}}, 1e-4,
                             1e-5, &whole);
  // Without onnxruntime the helper skipped (in its own frame): nothing to compare the chunks with.
  if (IsSkipped()) return;
  ASSERT_EQ(whole.size(), 1u);
  std::vector<Input> inputs = streaming_states(nullptr, 0);
  inputs.insert(inputs.begin(), {"x", Tensor::zeros(DType::kF32, {1, kChunk, 40})});
  BuilderConfig config;
  config.profiles.push_back(profile_of(inputs));
  auto engine = build_engine(exported("icefall_conformer_streaming.onnx"), config);
  ASSERT_TRUE(engine);
  auto context = engine->create_context(1);
  ASSERT_TRUE(context.has_value());
  const std::int64_t classes = whole[0].dim(2);
  for (std::int64_t c = 0; c < chunks; ++c) {
    Tensor chunk = Tensor::uninitialized(DType::kF32, {1, kChunk, 40});
    std::memcpy(chunk.raw_data(), utterance.data<float>() + c * kChunk * 40, chunk.size_bytes());
    inputs[0].value = chunk;
    auto out = (*context)->run(engine_inputs(*engine, inputs));
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    // Outputs: encoder_out, then the new states in the inputs' order.
    Tensor expected = Tensor::uninitialized(DType::kF32, {1, kChunk, classes});
    std::memcpy(expected.raw_data(), whole[0].data<float>() + c * kChunk * classes,
                expected.size_bytes());
    EXPECT_TRUE(all_close((*out)[0], expected, 1e-4, 1e-5, "chunk " + std::to_string(c)));
    for (std::size_t s = 1; s < inputs.size(); ++s) inputs[s].value = (*out)[s];
  }
  EXPECT_EQ(inputs.back().value.element_as_i64(0), chunks * kChunk);
}

}  // namespace
}  // namespace voxrt
