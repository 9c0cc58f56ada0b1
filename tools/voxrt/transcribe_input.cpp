#include "transcribe_input.h"

#include <cstdio>
#include <vector>

namespace voxrt::cli {

Expected<TranscribeInput> read_transcribe_input(const std::string& name, const RawPcmFormat& raw) {
  TranscribeInput input;
  if (name != "-") {
    VOXRT_ASSIGN_OR_RETURN(input.clip, audio::read_audio_file(name));
    return input;
  }
  std::vector<std::uint8_t> bytes;
  std::uint8_t block[1 << 16];
  for (std::size_t got; (got = std::fread(block, 1, sizeof(block), stdin)) > 0;)
    bytes.insert(bytes.end(), block, block + got);
  if (std::ferror(stdin)) return io_error("stdin: read failed after ", bytes.size(), " bytes");
  if (audio::looks_like_audio_file(bytes)) {
    const std::string_view view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    VOXRT_ASSIGN_OR_RETURN(input.clip, audio::read_audio_bytes(view, "stdin"));
    input.stdin_was_file = true;
    return input;
  }
  VOXRT_ASSIGN_OR_RETURN(input.clip.samples,
                         audio::decode_pcm(bytes, raw.encoding, raw.channels, "stdin"));
  input.clip.sample_rate_hz = raw.sample_rate_hz;
  input.clip.source_channels = raw.channels;
  return input;
}

}  // namespace voxrt::cli
