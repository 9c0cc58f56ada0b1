#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "audio/audio_io.h"
#include "audio_test_support.h"

namespace voxrt::audio {
namespace {

using testing::make_wav_s16;
using testing::write_file;

TEST(ReadAudioFile, StereoIsAveragedToMono) {
  const std::vector<std::int16_t> interleaved = {1000, 3000, -32768, 32767, 0, 16384};
  const std::string path = write_file("stereo.wav", make_wav_s16(interleaved, 22050, 2));
  auto clip = read_audio_file(path);
  ASSERT_TRUE(clip) << clip.status().to_string();
  EXPECT_EQ(clip->sample_rate_hz, 22050);
  EXPECT_EQ(clip->source_channels, 2);
  ASSERT_EQ(clip->samples.size(), 3u);
  EXPECT_FLOAT_EQ(clip->samples[0], 2000.0f / 32768.0f);
  EXPECT_NEAR(clip->samples[1], (-32768.0f + 32767.0f) / 2 / 32768.0f, 1e-7);
  EXPECT_FLOAT_EQ(clip->samples[2], 8192.0f / 32768.0f);
}

TEST(ReadAudioFile, PocketsphinxWavMatchesItsRawSamples) {
  auto wavs = testing::pocketsphinx_wavs();
  ASSERT_FALSE(wavs.empty());
  auto clip = read_audio_file(wavs[0]);
  ASSERT_TRUE(clip) << clip.status().to_string();
  EXPECT_EQ(clip->sample_rate_hz, 16000);
  EXPECT_GT(clip->samples.size(), 16000u);
  float peak = 0.0f;
  for (float s : clip->samples) peak = std::max(peak, std::fabs(s));
  EXPECT_GT(peak, 0.01f);
  EXPECT_LE(peak, 1.0f);
}

TEST(ReadAudioFile, MissingFileIsAnErrorNamingIt) {
  auto clip = read_audio_file("/nonexistent/voxrt.wav");
  ASSERT_FALSE(clip);
  EXPECT_NE(clip.status().message().find("/nonexistent/voxrt.wav"), std::string::npos);
}

TEST(ReadAudioFile, TruncatedHeaderIsAnError) {
  std::vector<std::uint8_t> bytes = make_wav_s16({1, 2, 3, 4}, 16000, 1);
  for (std::size_t keep : {0, 4, 12, 20, 30, 40}) {
    std::vector<std::uint8_t> truncated(bytes.begin(), bytes.begin() + keep);
    const std::string path = write_file("truncated_" + std::to_string(keep) + ".wav", truncated);
    auto clip = read_audio_file(path);
    EXPECT_FALSE(clip) << "kept " << keep << " bytes";
    if (!clip) {
      EXPECT_NE(clip.status().message().find(path), std::string::npos);
    }
  }
}

// Issue 31: a WAV cut short decoded to whatever was there (an empty transcript, exit 0); the
// common mistakes (no file, a folder, an empty file) said "libsndfile cannot read it".
TEST(ReadAudioFile, TruncatedDataMissingDirectoryAndEmptyFilesSaySo) {
  std::vector<std::int16_t> samples(16000, 100);  // 1 s at 16 kHz
  const std::vector<std::uint8_t> bytes = make_wav_s16(samples, 16000, 1);
  const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + 44 + 8000);
  auto truncated = read_audio_file(write_file("cut_data.wav", cut));
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.status().message().find("truncated WAV: its data chunk declares 32000 bytes "
                                              "(1 s), the file holds 8000 (0.25 s)"),
            std::string::npos)
      << truncated.status().message();
  const std::string as_bytes(cut.begin(), cut.end());
  EXPECT_FALSE(read_audio_bytes(as_bytes, "upload"));
  // A streaming writer's unknown size (0xFFFFFFFF) is not a truncation.
  std::vector<std::uint8_t> streamed = cut;
  for (int i = 40; i < 44; ++i) streamed[static_cast<std::size_t>(i)] = 0xFF;
  EXPECT_TRUE(check_wav_complete(std::string(streamed.begin(), streamed.end()), streamed.size(),
                                 "streamed"));
  auto missing = read_audio_file("/nonexistent/voxrt.wav");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos);
  auto folder = read_audio_file(testing::scratch_dir().string());
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.status().message().find("is a directory"), std::string::npos);
  auto empty = read_audio_file(write_file("empty.wav", {}));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.status().message().find("is empty (0 bytes)"), std::string::npos);
}

TEST(ReadAudioBytes, AudioFileHeadersAreRecognised) {
  const std::vector<std::uint8_t> wav = make_wav_s16({1, 2}, 16000, 1);
  EXPECT_TRUE(looks_like_audio_file(wav));
  const std::vector<std::uint8_t> flac = {'f', 'L', 'a', 'C', 0, 0};
  EXPECT_TRUE(looks_like_audio_file(flac));
  const std::vector<std::uint8_t> pcm = {0x00, 0x40, 0x00, 0xC0, 'R', 'I'};
  EXPECT_FALSE(looks_like_audio_file(pcm));
  EXPECT_FALSE(looks_like_audio_file(std::vector<std::uint8_t>{}));
}

TEST(ReadAudioFile, ZeroChannelsIsAnError) {
  const std::string path = write_file("zero_channels.wav", make_wav_s16({1, 2, 3, 4}, 16000, 0));
  auto clip = read_audio_file(path);
  ASSERT_FALSE(clip);
  EXPECT_NE(clip.status().message().find("zero_channels.wav"), std::string::npos);
}

TEST(ReadAudioFile, GarbageIsAnError) {
  std::vector<std::uint8_t> garbage(1000);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::uint8_t>(i * 37);
  EXPECT_FALSE(read_audio_file(write_file("garbage.wav", garbage)));
}

TEST(ReadAudioBytes, SameSamplesAsTheFile) {
  auto wavs = testing::pocketsphinx_wavs();
  ASSERT_FALSE(wavs.empty());
  auto from_file = read_audio_file(wavs[0]);
  ASSERT_TRUE(from_file) << from_file.status().to_string();
  std::ifstream in(wavs[0], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto from_bytes = read_audio_bytes(bytes, "upload");
  ASSERT_TRUE(from_bytes) << from_bytes.status().to_string();
  EXPECT_EQ(from_bytes->sample_rate_hz, from_file->sample_rate_hz);
  EXPECT_EQ(from_bytes->source_channels, from_file->source_channels);
  EXPECT_EQ(from_bytes->samples, from_file->samples);
}

TEST(ReadAudioBytes, TruncatedGarbageAndZeroChannelsAreErrorsNamingTheSource) {
  const std::vector<std::uint8_t> wav = make_wav_s16({1, 2, 3, 4}, 16000, 1);
  for (std::size_t keep : {0, 4, 12, 20, 30, 40}) {
    auto clip = read_audio_bytes(std::string(wav.begin(), wav.begin() + keep), "upload");
    EXPECT_FALSE(clip) << "kept " << keep << " bytes";
    if (!clip) {
      EXPECT_NE(clip.status().message().find("upload"), std::string::npos);
    }
  }
  const std::vector<std::uint8_t> zero = make_wav_s16({1, 2, 3, 4}, 16000, 0);
  EXPECT_FALSE(read_audio_bytes(std::string(zero.begin(), zero.end()), "upload"));
  std::string garbage(1000, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 37);
  EXPECT_FALSE(read_audio_bytes(garbage, "upload"));
  auto whole = read_audio_bytes(std::string(wav.begin(), wav.end()), "upload");
  ASSERT_TRUE(whole) << whole.status().to_string();
  EXPECT_EQ(whole->samples.size(), 4u);
}

// audio_bytes_fuzz found this 68-byte RIFF/WAVE (kept as a fuzz seed), an 'INFO' chunk declaring
// about 4 GB, on which libsndfile 1.2.0's sf_open spins for minutes (an upload of it would hold an
// upload thread): it is refused before libsndfile sees it, while a chunk that fits still reads.
TEST(ReadAudioBytes, ChunkLongerThanTheFileIsRefusedBeforeLibsndfile) {
  const std::string fuzz_input =
      testing::read_bytes(testing::source_file("fuzz/seeds/audio/riff_info_chunk_4gb.wav"));
  ASSERT_EQ(fuzz_input.size(), 68u) << "the kept fuzz input is missing";
  auto clip = read_audio_bytes(fuzz_input, "upload");
  ASSERT_FALSE(clip);
  const std::string message = clip.status().message();
  EXPECT_NE(message.find("upload: WAV chunk 'INFO' at byte 12 declares 4294957650 bytes, the "
                         "file holds 48 after its header"),
            std::string::npos)
      << message;

  // The same kind of chunk, of a size that fits, before fmt and data: read as before.
  const std::vector<std::uint8_t> wav = make_wav_s16({1, 2, 3, 4}, 16000, 1);
  std::string with_list(wav.begin(), wav.begin() + 12);
  with_list += std::string("LIST\x04\x00\x00\x00INFO", 12);
  with_list += std::string(wav.begin() + 12, wav.end());
  const std::uint32_t riff_size = static_cast<std::uint32_t>(with_list.size() - 8);
  for (int i = 0; i < 4; ++i) with_list[4 + i] = static_cast<char>((riff_size >> (8 * i)) & 0xff);
  auto listed = read_audio_bytes(with_list, "upload");
  ASSERT_TRUE(listed) << listed.status().to_string();
  EXPECT_EQ(listed->samples.size(), 4u);
}

// audio_bytes_fuzz found these 168 bytes (kept as a fuzz seed; FLAC frame sync, then AIFF-like
// chunks) that FFmpeg decodes into frames whose layout changes after the first: the downmixer, set
// up for the first frame, made swr_convert read a null plane (SEGV). Either a clean error or
// samples, never a crash.
TEST(ReadAudioBytes, FramesChangingLayoutMidStreamDoNotCrashTheDownmix) {
  const std::string fuzz_input =
      testing::read_bytes(testing::source_file("fuzz/seeds/audio/ffmpeg_layout_change_segv.bin"));
  ASSERT_EQ(fuzz_input.size(), 168u) << "the kept fuzz input is missing";
  auto clip = read_audio_bytes(fuzz_input, "upload");
  if (!clip) {
    EXPECT_NE(clip.status().message().find("upload"), std::string::npos) << clip.status().message();
  }
}

TEST(DecodePcm, S16AndF32) {
  const std::vector<std::uint8_t> s16 = {0x00, 0x40, 0x00, 0xC0};  // 16384, -16384
  auto mono = decode_pcm(s16, PcmEncoding::kS16LE, 1, "test");
  ASSERT_TRUE(mono);
  EXPECT_EQ(*mono, (std::vector<float>{0.5f, -0.5f}));
  auto stereo = decode_pcm(s16, PcmEncoding::kS16LE, 2, "test");
  ASSERT_TRUE(stereo);
  EXPECT_EQ(*stereo, (std::vector<float>{0.0f}));
  const float values[2] = {0.25f, -1.5f};
  std::vector<std::uint8_t> f32(8);
  std::memcpy(f32.data(), values, 8);
  auto floats = decode_pcm(f32, PcmEncoding::kF32LE, 1, "test");
  ASSERT_TRUE(floats);
  EXPECT_EQ(*floats, (std::vector<float>{0.25f, -1.5f}));
}

TEST(DecodePcm, S24) {
  // 0x400000 = 2^22 -> 0.5; 0xC00000 -> -0.5; 0x7FFFFF -> just under 1.
  const std::vector<std::uint8_t> s24 = {0x00, 0x00, 0x40, 0x00, 0x00, 0xC0, 0xFF, 0xFF, 0x7F};
  auto mono = decode_pcm(s24, PcmEncoding::kS24LE, 1, "test");
  ASSERT_TRUE(mono) << mono.status().to_string();
  ASSERT_EQ(mono->size(), 3u);
  EXPECT_FLOAT_EQ((*mono)[0], 0.5f);
  EXPECT_FLOAT_EQ((*mono)[1], -0.5f);
  EXPECT_NEAR((*mono)[2], 1.0f, 1e-6);
  EXPECT_EQ(*parse_pcm_encoding("s24"), PcmEncoding::kS24LE);
  EXPECT_FALSE(decode_pcm(std::vector<std::uint8_t>(4), PcmEncoding::kS24LE, 1, "test"));
}

TEST(DecodePcm, BadInputIsAnErrorThatSaysWhat) {
  const std::vector<std::uint8_t> three_bytes = {1, 2, 3};
  auto odd = decode_pcm(three_bytes, PcmEncoding::kS16LE, 1, "stdin");
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.status().message().find("stdin: expected a multiple of 2 bytes"), std::string::npos)
      << odd.status().message();
  EXPECT_FALSE(decode_pcm(three_bytes, PcmEncoding::kS16LE, 0, "stdin"));
  EXPECT_FALSE(parse_pcm_encoding("mp3"));
  EXPECT_TRUE(parse_pcm_encoding("f32le"));
}

TEST(PcmChunkDecoder, SplitSamplesAreCarriedOver) {
  std::vector<std::uint8_t> bytes;
  std::vector<float> expected;
  for (int i = 0; i < 101; ++i) {
    const std::int16_t left = static_cast<std::int16_t>(i * 300 - 15000);
    const std::int16_t right = static_cast<std::int16_t>(-i * 7);
    testing::put_u16(bytes, static_cast<std::uint16_t>(left));
    testing::put_u16(bytes, static_cast<std::uint16_t>(right));
    expected.push_back((left / 32768.0f + right / 32768.0f) / 2);
  }
  auto decoder = PcmChunkDecoder::create(PcmEncoding::kS16LE, 2);
  ASSERT_TRUE(decoder);
  std::vector<float> samples;
  std::size_t position = 0;
  for (std::size_t chunk = 1; position < bytes.size(); chunk = chunk % 7 + 1) {
    const std::size_t size = std::min(chunk, bytes.size() - position);
    decoder->push(std::span(bytes.data() + position, size), samples);
    position += size;
  }
  EXPECT_EQ(decoder->pending_bytes(), 0u);
  EXPECT_EQ(samples, expected);
}

TEST(ReadPcmStream, ReadsAFile) {
  const std::string path = write_file("raw.s16", {0x00, 0x40, 0x00, 0xC0, 0x00, 0x00});
  std::FILE* file = std::fopen(path.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  auto clip = read_pcm_stream(file, PcmEncoding::kS16LE, 8000, 1, path);
  std::fclose(file);
  ASSERT_TRUE(clip) << clip.status().to_string();
  EXPECT_EQ(clip->samples, (std::vector<float>{0.5f, -0.5f, 0.0f}));
  EXPECT_EQ(clip->sample_rate_hz, 8000);
}

}  // namespace
}  // namespace voxrt::audio
