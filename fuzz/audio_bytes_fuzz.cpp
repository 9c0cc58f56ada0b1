// libFuzzer target: arbitrary bytes as an uploaded audio file (read_audio_bytes, what the
// server's /v1/audio/transcriptions runs on an upload) and as raw PCM through the chunked decoder
// the WebSocket path uses. Bad input must give an error, never a crash; decoded samples must
// come out in whole frames.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "audio/audio_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace voxrt::audio;
  auto clip =
      read_audio_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
  if (clip && (clip->sample_rate_hz < 1 || clip->source_channels < 1)) __builtin_trap();

  if (size < 2) return 0;
  // Byte 0 picks the encoding and channel count, byte 1 the chunk size; the rest is PCM.
  const PcmEncoding encoding = (data[0] & 1) ? PcmEncoding::kF32LE : PcmEncoding::kS16LE;
  const int channels = 1 + (data[0] >> 1) % 8;
  const std::size_t chunk = 1 + data[1];
  const std::span<const std::uint8_t> pcm(data + 2, size - 2);
  auto decoder = PcmChunkDecoder::create(encoding, channels);
  if (!decoder) __builtin_trap();
  std::vector<float> chunked;
  for (std::size_t at = 0; at < pcm.size(); at += chunk)
    decoder->push(pcm.subspan(at, std::min(chunk, pcm.size() - at)), chunked);
  const std::size_t frame_bytes =
      static_cast<std::size_t>(pcm_bytes_per_sample(encoding)) * static_cast<std::size_t>(channels);
  if (chunked.size() != pcm.size() / frame_bytes ||
      decoder->pending_bytes() != pcm.size() % frame_bytes)
    __builtin_trap();
  auto whole = decode_pcm(pcm, encoding, channels, "fuzz input");
  if (whole.has_value() != (pcm.size() % frame_bytes == 0)) __builtin_trap();
  return 0;
}
