// The C API's contract (include/voxrt/voxrt_c.h) without a model: ABI version, error codes and
// messages for bad arguments and bad files, option structs from another ABI refused. With the
// engine the c_api_engine fixture builds: streams decoded from several threads at once share
// engine rounds, and each gets the same text as alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "voxrt/voxrt_c.h"

namespace {

std::string temp_file(const std::string& name, const std::string& contents) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path, std::ios::binary) << contents;
  return path.string();
}

TEST(CApi, AbiVersionAndStatusNames) {
  EXPECT_EQ(voxrt_abi_version(), VOXRT_C_ABI_VERSION);
  EXPECT_STRNE(voxrt_version(), "");
  EXPECT_STREQ(voxrt_status_name(VOXRT_OK), "ok");
  EXPECT_STREQ(voxrt_status_name(VOXRT_IO_ERROR), "i/o error");
  EXPECT_STREQ(voxrt_status_name(static_cast<voxrt_status>(99)), "unknown");
}

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  voxrt_engine* engine = reinterpret_cast<voxrt_engine*>(0x1);
  EXPECT_EQ(voxrt_engine_load(nullptr, &engine), VOXRT_INVALID_ARGUMENT);
  EXPECT_EQ(engine, nullptr);
  EXPECT_NE(std::string(voxrt_last_error()).find("voxrt_engine_load"), std::string::npos);
  EXPECT_EQ(voxrt_engine_build(nullptr, nullptr, nullptr), VOXRT_INVALID_ARGUMENT);
  voxrt_recognizer* recognizer = nullptr;
  EXPECT_EQ(voxrt_recognizer_create(nullptr, nullptr, &recognizer), VOXRT_INVALID_ARGUMENT);
  EXPECT_EQ(voxrt_stream_create(nullptr, nullptr, nullptr), VOXRT_INVALID_ARGUMENT);
  const float samples[4] = {};
  EXPECT_EQ(voxrt_stream_accept_f32(nullptr, samples, 4), VOXRT_INVALID_ARGUMENT);
  EXPECT_EQ(voxrt_stream_decode(nullptr), VOXRT_INVALID_ARGUMENT);
  voxrt_result* result = nullptr;
  EXPECT_EQ(voxrt_stream_poll(nullptr, &result), VOXRT_INVALID_ARGUMENT);
  EXPECT_EQ(voxrt_recognizer_decode(nullptr, nullptr, 0, nullptr), VOXRT_INVALID_ARGUMENT);
  EXPECT_EQ(voxrt_stream_is_finished(nullptr), 0);
  EXPECT_EQ(voxrt_engine_metadata(nullptr, "x"), nullptr);
  // Destroying NULL is a no-op, as free(NULL) is.
  voxrt_engine_destroy(nullptr);
  voxrt_recognizer_destroy(nullptr);
  voxrt_stream_destroy(nullptr);
  voxrt_result_destroy(nullptr);
  voxrt_samples_destroy(nullptr);
}

TEST(CApi, MissingAndCorruptEngineFilesSayWhichFile) {
  voxrt_engine* engine = nullptr;
  const voxrt_status missing = voxrt_engine_load("/nonexistent/model.engine", &engine);
  EXPECT_NE(missing, VOXRT_OK);
  EXPECT_EQ(engine, nullptr);
  EXPECT_NE(std::string(voxrt_last_error()).find("/nonexistent/model.engine"), std::string::npos)
      << voxrt_last_error();
  const std::string junk = temp_file("voxrt_c_api_junk.engine", "this is not an engine file");
  EXPECT_NE(voxrt_engine_load(junk.c_str(), &engine), VOXRT_OK);
  EXPECT_EQ(engine, nullptr);
  EXPECT_NE(std::string(voxrt_last_error()).find("voxrt_c_api_junk.engine"), std::string::npos)
      << voxrt_last_error();
}

TEST(CApi, BuildRefusesAModelThatIsNotOnnx) {
  const std::string junk = temp_file("voxrt_c_api_junk.onnx", "not a protobuf");
  const std::string out = (std::filesystem::temp_directory_path() / "voxrt_c_api_out.engine");
  EXPECT_NE(voxrt_engine_build(junk.c_str(), out.c_str(), nullptr), VOXRT_OK);
  EXPECT_NE(std::string(voxrt_last_error()).find("voxrt_c_api_junk.onnx"), std::string::npos)
      << voxrt_last_error();
}

TEST(CApi, OptionsFromAnotherAbiAreRefused) {
  voxrt_build_options options;
  voxrt_build_options_init(&options);
  EXPECT_EQ(options.struct_size, sizeof(voxrt_build_options));
  EXPECT_EQ(options.autotune, 1);
  options.struct_size = sizeof(voxrt_build_options) - 8;
  EXPECT_EQ(voxrt_engine_build("a.onnx", "a.engine", &options), VOXRT_VERSION_MISMATCH);
  EXPECT_NE(std::string(voxrt_last_error()).find("struct_size"), std::string::npos);
}

TEST(CApi, ReadAudioFileErrors) {
  float* samples = reinterpret_cast<float*>(0x1);
  size_t count = 7;
  int rate = 0;
  EXPECT_NE(voxrt_read_audio_file("/nonexistent.wav", &samples, &count, &rate), VOXRT_OK);
  EXPECT_EQ(samples, nullptr);
  EXPECT_EQ(count, 0u);
  EXPECT_NE(std::string(voxrt_last_error()).find("/nonexistent.wav"), std::string::npos);
}

// ---- with the default model's engine (fixture c_api_engine) ------------------------------------

std::string fixture_engine() {
  const char* dir = std::getenv("VOXRT_C_API_ENGINE");
  return dir ? dir : "";
}

struct Transcript {
  std::string finals;
  int partials = 0;
};

// Feeds the whole clip in 20 ms pieces through one stream, decoding after each piece.
Transcript transcribe(voxrt_recognizer* recognizer, const std::vector<float>& samples,
                      int sample_rate_hz) {
  Transcript out;
  voxrt_stream_options options;
  voxrt_stream_options_init(&options);
  options.sample_rate_hz = sample_rate_hz;
  voxrt_stream* stream = nullptr;
  EXPECT_EQ(voxrt_stream_create(recognizer, &options, &stream), VOXRT_OK) << voxrt_last_error();
  auto drain = [&] {
    for (voxrt_result* r = nullptr; voxrt_stream_poll(stream, &r) == VOXRT_OK && r != nullptr;) {
      if (r->is_final) {
        out.finals += (out.finals.empty() ? "" : " ") + std::string(r->text);
      } else {
        ++out.partials;
      }
      voxrt_result_destroy(r);
    }
  };
  const std::size_t piece = static_cast<std::size_t>(sample_rate_hz) / 50;
  for (std::size_t at = 0; at < samples.size(); at += piece) {
    const std::size_t n = std::min(piece, samples.size() - at);
    EXPECT_EQ(voxrt_stream_accept_f32(stream, samples.data() + at, n), VOXRT_OK);
    EXPECT_EQ(voxrt_stream_decode(stream), VOXRT_OK) << voxrt_last_error();
    drain();
  }
  EXPECT_EQ(voxrt_stream_input_finished(stream), VOXRT_OK);
  while (!voxrt_stream_is_finished(stream)) {
    EXPECT_EQ(voxrt_stream_decode(stream), VOXRT_OK) << voxrt_last_error();
  }
  drain();
  // Audio after the end is an error with a message, not a crash.
  EXPECT_EQ(voxrt_stream_accept_f32(stream, samples.data(), 1), VOXRT_FAILED_PRECONDITION);
  voxrt_stream_destroy(stream);
  return out;
}

TEST(CApiWithEngine, ThreadsShareRoundsAndGetTheTextOfOneStreamAlone) {
  const std::string engine_path = fixture_engine();
  if (engine_path.empty()) GTEST_SKIP() << "VOXRT_C_API_ENGINE not set (ctest sets it)";
  voxrt_engine* engine = nullptr;
  ASSERT_EQ(voxrt_engine_load(engine_path.c_str(), &engine), VOXRT_OK) << voxrt_last_error();
  EXPECT_STREQ(voxrt_engine_metadata(engine, "voxrt.model_family"), "ctc_streaming");
  EXPECT_EQ(voxrt_engine_metadata(engine, "no.such.key"), nullptr);
  voxrt_recognizer_options options;
  voxrt_recognizer_options_init(&options);
  voxrt_recognizer* recognizer = nullptr;
  // An enum value a C caller made up is an error, not undefined behaviour.
  options.decoder = static_cast<voxrt_decoder>(7);
  EXPECT_EQ(voxrt_recognizer_create(engine, &options, &recognizer), VOXRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(voxrt_last_error()).find("options.decoder is 7"), std::string::npos);
  options.decoder = VOXRT_DECODER_GREEDY;
  options.max_streams = 4;
  ASSERT_EQ(voxrt_recognizer_create(engine, &options, &recognizer), VOXRT_OK) << voxrt_last_error();
  voxrt_engine_destroy(engine);  // the recognizer does not need the handle

  float* samples = nullptr;
  size_t count = 0;
  int rate = 0;
  const std::string wav = std::string(std::getenv("VOXRT_SOURCE_DIR")) + "/samples/play_music.wav";
  ASSERT_EQ(voxrt_read_audio_file(wav.c_str(), &samples, &count, &rate), VOXRT_OK);
  const std::vector<float> clip(samples, samples + count);
  voxrt_samples_destroy(samples);

  const Transcript alone = transcribe(recognizer, clip, rate);
  EXPECT_NE(alone.finals.find("play some music"), std::string::npos) << alone.finals;
  EXPECT_GT(alone.partials, 0);

  std::vector<Transcript> each(4);
  std::vector<std::thread> threads;
  for (auto& t : each)
    threads.emplace_back([&, out = &t] { *out = transcribe(recognizer, clip, rate); });
  for (auto& t : threads) t.join();
  for (const auto& t : each) EXPECT_EQ(t.finals, alone.finals);

  // More streams than max_streams: a resource error with a message, and the others still work.
  std::vector<voxrt_stream*> streams(4, nullptr);
  for (auto*& s : streams) ASSERT_EQ(voxrt_stream_create(recognizer, nullptr, &s), VOXRT_OK);
  voxrt_stream* extra = nullptr;
  EXPECT_EQ(voxrt_stream_create(recognizer, nullptr, &extra), VOXRT_RESOURCE_EXHAUSTED)
      << voxrt_last_error();
  EXPECT_EQ(extra, nullptr);
  int calls = -1;
  EXPECT_EQ(voxrt_recognizer_decode(recognizer, streams.data(), streams.size(), &calls), VOXRT_OK);
  EXPECT_EQ(calls, 0);  // nothing fed yet
  // One decode of four streams with the same second of audio: the engine calls of one stream
  // alone, each call a batch of four.
  const std::size_t one_second = static_cast<std::size_t>(rate);
  for (auto* s : streams) ASSERT_EQ(voxrt_stream_accept_f32(s, clip.data(), one_second), VOXRT_OK);
  int calls_of_four = 0;
  EXPECT_EQ(voxrt_recognizer_decode(recognizer, streams.data(), 4, &calls_of_four), VOXRT_OK);
  for (auto* s : streams) voxrt_stream_destroy(s);
  for (auto*& s : streams) ASSERT_EQ(voxrt_stream_create(recognizer, nullptr, &s), VOXRT_OK);
  ASSERT_EQ(voxrt_stream_accept_f32(streams[0], clip.data(), one_second), VOXRT_OK);
  int calls_of_one = 0;
  EXPECT_EQ(voxrt_recognizer_decode(recognizer, streams.data(), 1, &calls_of_one), VOXRT_OK);
  EXPECT_GT(calls_of_one, 0);
  EXPECT_EQ(calls_of_four, calls_of_one);
  for (auto* s : streams) voxrt_stream_destroy(s);
  voxrt_recognizer_destroy(recognizer);
}

}  // namespace
