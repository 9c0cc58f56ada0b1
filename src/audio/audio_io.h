// Reading audio into mono float samples in [-1, 1]: files through libsndfile (any format and
// channel count it reads), raw PCM (s16le / f32le) from memory, a stream, or chunk by chunk.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::audio {

struct AudioClip {
  // Mono samples in [-1, 1]; channels are averaged.
  std::vector<float> samples;
  int sample_rate_hz = 0;
  // Channels in the source before the downmix.
  int source_channels = 0;
};

enum class PcmEncoding : std::uint8_t { kS16LE, kS24LE, kF32LE };

// "s16le" / "s24le" / "f32le" (also "s16", "s24", "f32").
Expected<PcmEncoding> parse_pcm_encoding(std::string_view name);
int pcm_bytes_per_sample(PcmEncoding encoding);

// Any file libsndfile reads (WAV, FLAC, OGG, AIFF, ...), downmixed to mono. A missing file, a
// directory, an empty file and a WAV shorter than its header says are errors that say so.
Expected<AudioClip> read_audio_file(const std::string& path);
// The same from bytes in memory (an upload); `source_name` goes into error messages.
Expected<AudioClip> read_audio_bytes(std::string_view bytes, std::string_view source_name);
// Whether the bytes start like a file read_audio_bytes takes (RIFF/RF64 WAVE, FLAC, Ogg, AIFF,
// and the browsers' WebM/Matroska and MP4 that it reads through FFmpeg):
// a WAV piped to stdin is read as a file, not as raw samples.
bool looks_like_audio_file(std::span<const std::uint8_t> bytes);
// A RIFF/WAVE whose data chunk declares more bytes than the file's `total_bytes` hold is an error
// naming both sizes (a size of 0 or 0xFFFFFFFF, what streaming writers leave, is accepted).
// `bytes` is the file or its head (chunk headers beyond it are not checked). Other files: ok.
Status check_wav_complete(std::string_view bytes, std::uint64_t total_bytes, std::string_view name);

// Whole buffers of interleaved raw PCM; `source_name` goes into error messages.
Expected<std::vector<float>> decode_pcm(std::span<const std::uint8_t> bytes, PcmEncoding encoding,
                                        int channels, std::string_view source_name);

// Reads raw PCM until end of file (e.g. stdin).
Expected<AudioClip> read_pcm_stream(std::FILE* input, PcmEncoding encoding, int sample_rate_hz,
                                    int channels, std::string_view source_name);

// Raw PCM arriving in arbitrary byte chunks (network packets): a partial sample frame at the end
// of one chunk is carried over to the next.
class PcmChunkDecoder {
 public:
  static Expected<PcmChunkDecoder> create(PcmEncoding encoding, int channels);
  // Appends the mono samples completed by `bytes` to `samples_out`.
  void push(std::span<const std::uint8_t> bytes, std::vector<float>& samples_out);
  // Bytes of an incomplete sample frame still waiting for the next chunk.
  std::size_t pending_bytes() const { return pending_.size(); }

 private:
  PcmChunkDecoder(PcmEncoding encoding, int channels) : encoding_(encoding), channels_(channels) {}
  PcmEncoding encoding_;
  int channels_;
  std::vector<std::uint8_t> pending_;
};

}  // namespace voxrt::audio
