#include "audio/audio_io.h"

#include <sndfile.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace voxrt::audio {
namespace {

float decode_one(const std::uint8_t* bytes, PcmEncoding encoding) {
  if (encoding == PcmEncoding::kS16LE) {
    const auto value = static_cast<std::int16_t>(static_cast<std::uint16_t>(bytes[0]) |
                                                 (static_cast<std::uint16_t>(bytes[1]) << 8));
    return static_cast<float>(value) / 32768.0f;
  }
  const std::uint32_t bits =
      static_cast<std::uint32_t>(bytes[0]) | (static_cast<std::uint32_t>(bytes[1]) << 8) |
      (static_cast<std::uint32_t>(bytes[2]) << 16) | (static_cast<std::uint32_t>(bytes[3]) << 24);
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Appends the mono average of whole interleaved frames; returns the bytes consumed.
std::size_t decode_frames(std::span<const std::uint8_t> bytes, PcmEncoding encoding, int channels,
                          std::vector<float>& out) {
  const std::size_t sample_bytes = static_cast<std::size_t>(pcm_bytes_per_sample(encoding));
  const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(channels);
  const std::size_t frames = bytes.size() / frame_bytes;
  out.reserve(out.size() + frames);
  for (std::size_t f = 0; f < frames; ++f) {
    const std::uint8_t* frame = bytes.data() + f * frame_bytes;
    float sum = 0.0f;
    for (int c = 0; c < channels; ++c) sum += decode_one(frame + c * sample_bytes, encoding);
    out.push_back(channels == 1 ? sum : sum / static_cast<float>(channels));
  }
  return frames * frame_bytes;
}

Status check_channels(int channels, std::string_view source_name) {
  if (channels < 1 || channels > 64) {
    return invalid_argument(source_name, ": expected 1 to 64 channels, found ", channels);
  }
  return Status::ok();
}

struct SndfileCloser {
  void operator()(SNDFILE* file) const { sf_close(file); }
};

}  // namespace

Expected<PcmEncoding> parse_pcm_encoding(std::string_view name) {
  if (name == "s16le" || name == "s16") return PcmEncoding::kS16LE;
  if (name == "f32le" || name == "f32") return PcmEncoding::kF32LE;
  return invalid_argument("PCM encoding: expected s16le or f32le, found '", name, "'");
}

int pcm_bytes_per_sample(PcmEncoding encoding) {
  return encoding == PcmEncoding::kS16LE ? 2 : 4;
}

namespace {

// libsndfile's virtual I/O over a byte buffer (uploads, fuzzing): no temporary file.
struct MemoryFile {
  std::string_view bytes;
  sf_count_t position = 0;
};

sf_count_t memory_length(void* user) {
  return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes.size());
}

sf_count_t memory_seek(sf_count_t offset, int whence, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  const auto size = static_cast<sf_count_t>(file->bytes.size());
  sf_count_t base = 0;
  if (whence == SEEK_CUR) base = file->position;
  if (whence == SEEK_END) base = size;
  // Seeking outside the buffer is refused (libsndfile then reports a read error).
  if (offset > size || offset < -size || base + offset < 0 || base + offset > size) return -1;
  file->position = base + offset;
  return file->position;
}

sf_count_t memory_read(void* out, sf_count_t count, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  const auto size = static_cast<sf_count_t>(file->bytes.size());
  if (count <= 0 || file->position >= size) return 0;
  const sf_count_t n = std::min(count, size - file->position);
  std::memcpy(out, file->bytes.data() + file->position, static_cast<std::size_t>(n));
  file->position += n;
  return n;
}

sf_count_t memory_write(const void*, sf_count_t, void*) {
  return 0;
}

sf_count_t memory_tell(void* user) {
  return static_cast<MemoryFile*>(user)->position;
}

// Decodes an open file, downmixed to mono. `name` goes into error messages.
Expected<AudioClip> read_clip(SNDFILE* file, const SF_INFO& info, std::string_view name) {
  if (info.channels < 1 || info.channels > 1024) {
    return corrupt(name, ": expected 1 to 1024 channels, found ", info.channels);
  }
  if (info.samplerate < 1) {
    return corrupt(name, ": expected a positive sample rate, found ", info.samplerate);
  }
  AudioClip clip;
  clip.sample_rate_hz = info.samplerate;
  clip.source_channels = info.channels;
  // The header's frame count is a hint only (a corrupt header may claim terabytes).
  constexpr sf_count_t kMaxReserveFrames = sf_count_t{1} << 22;
  if (info.frames > 0)
    clip.samples.reserve(static_cast<std::size_t>(std::min(info.frames, kMaxReserveFrames)));
  constexpr sf_count_t kBlockFrames = 4096;
  std::vector<float> block(static_cast<std::size_t>(kBlockFrames * info.channels));
  while (true) {
    const sf_count_t got = sf_readf_float(file, block.data(), kBlockFrames);
    if (got <= 0) break;
    for (sf_count_t f = 0; f < got; ++f) {
      float sum = 0.0f;
      for (int c = 0; c < info.channels; ++c) sum += block[f * info.channels + c];
      clip.samples.push_back(info.channels == 1 ? sum : sum / static_cast<float>(info.channels));
    }
  }
  if (sf_error(file) != SF_ERR_NO_ERROR) {
    return io_error(name, ": reading samples failed after ", clip.samples.size(),
                    " frames: ", sf_strerror(file));
  }
  return clip;
}

}  // namespace

Expected<AudioClip> read_audio_file(const std::string& path) {
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> file(sf_open(path.c_str(), SFM_READ, &info));
  if (!file) {
    return io_error(path,
                    ": expected an audio file libsndfile can read, found: ", sf_strerror(nullptr));
  }
  return read_clip(file.get(), info, path);
}

Expected<AudioClip> read_audio_bytes(std::string_view bytes, std::string_view source_name) {
  MemoryFile memory{bytes, 0};
  SF_VIRTUAL_IO io{memory_length, memory_seek, memory_read, memory_write, memory_tell};
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> file(sf_open_virtual(&io, SFM_READ, &info, &memory));
  if (!file) {
    return invalid_argument(source_name,
                            ": expected audio libsndfile can read, found: ", sf_strerror(nullptr));
  }
  return read_clip(file.get(), info, source_name);
}

Expected<std::vector<float>> decode_pcm(std::span<const std::uint8_t> bytes, PcmEncoding encoding,
                                        int channels, std::string_view source_name) {
  VOXRT_RETURN_IF_ERROR(check_channels(channels, source_name));
  const std::size_t frame_bytes =
      static_cast<std::size_t>(pcm_bytes_per_sample(encoding)) * static_cast<std::size_t>(channels);
  if (bytes.size() % frame_bytes != 0) {
    return corrupt(source_name, ": expected a multiple of ", frame_bytes,
                   " bytes (whole sample frames), found ", bytes.size());
  }
  std::vector<float> samples;
  decode_frames(bytes, encoding, channels, samples);
  return samples;
}

Expected<AudioClip> read_pcm_stream(std::FILE* input, PcmEncoding encoding, int sample_rate_hz,
                                    int channels, std::string_view source_name) {
  VOXRT_RETURN_IF_ERROR(check_channels(channels, source_name));
  if (sample_rate_hz < 1) {
    return invalid_argument(source_name, ": expected a positive sample rate, found ",
                            sample_rate_hz);
  }
  if (input == nullptr) return invalid_argument(source_name, ": no input stream");
  std::vector<std::uint8_t> bytes;
  std::uint8_t block[1 << 16];
  while (true) {
    const std::size_t got = std::fread(block, 1, sizeof(block), input);
    bytes.insert(bytes.end(), block, block + got);
    if (got < sizeof(block)) break;
  }
  if (std::ferror(input))
    return io_error(source_name, ": read failed after ", bytes.size(), " bytes");
  VOXRT_ASSIGN_OR_RETURN(auto samples, decode_pcm(bytes, encoding, channels, source_name));
  AudioClip clip;
  clip.samples = std::move(samples);
  clip.sample_rate_hz = sample_rate_hz;
  clip.source_channels = channels;
  return clip;
}

Expected<PcmChunkDecoder> PcmChunkDecoder::create(PcmEncoding encoding, int channels) {
  VOXRT_RETURN_IF_ERROR(check_channels(channels, "PCM stream"));
  return PcmChunkDecoder(encoding, channels);
}

void PcmChunkDecoder::push(std::span<const std::uint8_t> bytes, std::vector<float>& samples_out) {
  if (!pending_.empty()) {
    pending_.insert(pending_.end(), bytes.begin(), bytes.end());
    const std::size_t used = decode_frames(pending_, encoding_, channels_, samples_out);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(used));
    return;
  }
  const std::size_t used = decode_frames(bytes, encoding_, channels_, samples_out);
  pending_.assign(bytes.begin() + static_cast<std::ptrdiff_t>(used), bytes.end());
}

}  // namespace voxrt::audio
