#include "audio/audio_io.h"

#include "audio/encoded_audio_reader.h"

#include <sndfile.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

namespace voxrt::audio {
namespace {

float decode_one(const std::uint8_t* bytes, PcmEncoding encoding) {
  if (encoding == PcmEncoding::kS16LE) {
    const auto value = static_cast<std::int16_t>(static_cast<std::uint16_t>(bytes[0]) |
                                                 (static_cast<std::uint16_t>(bytes[1]) << 8));
    return static_cast<float>(value) / 32768.0f;
  }
  if (encoding == PcmEncoding::kS24LE) {
    // Three bytes, little-endian, two's complement: shifted into the top of an int32.
    const auto value = static_cast<std::int32_t>((static_cast<std::uint32_t>(bytes[0]) << 8) |
                                                 (static_cast<std::uint32_t>(bytes[1]) << 16) |
                                                 (static_cast<std::uint32_t>(bytes[2]) << 24));
    return static_cast<float>(value / 256) / 8388608.0f;
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
  if (name == "s24le" || name == "s24") return PcmEncoding::kS24LE;
  if (name == "f32le" || name == "f32") return PcmEncoding::kF32LE;
  return invalid_argument("PCM encoding: expected s16, s24 or f32 (little-endian), found '", name,
                          "'");
}

int pcm_bytes_per_sample(PcmEncoding encoding) {
  switch (encoding) {
    case PcmEncoding::kS16LE: return 2;
    case PcmEncoding::kS24LE: return 3;
    case PcmEncoding::kF32LE: return 4;
  }
  return 4;
}

namespace {

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

// A chunk id for an error message: its four bytes, or their hex where not printable.
std::string printable_chunk_id(std::string_view id) {
  std::string text;
  for (const char c : id) {
    if (c >= 0x20 && c < 0x7f) {
      text += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto byte = static_cast<std::uint8_t>(c);
      text += "\\x";
      text += kHex[byte >> 4];
      text += kHex[byte & 15];
    }
  }
  return text;
}

}  // namespace

Status check_wav_complete(std::string_view bytes, std::uint64_t total_bytes,
                          std::string_view name) {
  // RIFF/WAVE: chunks of [4-byte id][4-byte little-endian size][data, padded to even].
  auto u32 = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at])) |
           static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 1])) << 8 |
           static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 2])) << 16 |
           static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 3])) << 24;
  };
  if (bytes.size() < 12 || bytes.substr(0, 4) != "RIFF" || bytes.substr(8, 4) != "WAVE")
    return Status::ok();
  std::uint32_t block_align = 0, byte_rate = 0;
  // `bytes` may be the file's head only: chunk headers past it are not checked.
  for (std::size_t at = 12; at + 8 <= bytes.size();) {
    const std::string_view id = bytes.substr(at, 4);
    const std::uint32_t size = u32(at + 4);
    if (id == "fmt " && at + 24 <= bytes.size()) {
      byte_rate = u32(at + 16);
      block_align = static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 20])) |
                    static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 21])) << 8;
    }
    if (id == "data") {
      // Writers that stream (arecord, ffmpeg to a pipe) leave the size 0 or 0xFFFFFFFF.
      if (size == 0 || size == 0xFFFFFFFFu) return Status::ok();
      const std::uint64_t held = total_bytes - (at + 8);
      if (held >= size) return Status::ok();
      auto seconds = [&](double n) { return byte_rate > 0 ? n / byte_rate : 0.0; };
      return corrupt(name, ": truncated WAV: its data chunk declares ", size, " bytes (",
                     seconds(size), " s), the file holds ", held, " (",
                     seconds(static_cast<double>(held)), " s)",
                     block_align > 0 && held % block_align != 0 ? ", a partial frame" : "");
    }
    // A chunk before the data that claims more bytes than the file has is corrupt, and
    // libsndfile 1.2.0 can spin forever on one (found by audio_bytes_fuzz: a 68-byte RIFF/WAVE
    // with an 'INFO' chunk of 4 GB kept sf_open busy for minutes): refuse it here, first.
    const std::uint64_t chunk_end = static_cast<std::uint64_t>(at) + 8 + size;
    if (chunk_end > total_bytes) {
      return corrupt(name, ": WAV chunk '", printable_chunk_id(id), "' at byte ", at, " declares ",
                     size, " bytes, the file holds ", total_bytes - (at + 8),
                     " after its header (expected every chunk before 'data' inside the file)");
    }
    at += 8 + static_cast<std::size_t>(size) + (size % 2);
  }
  return Status::ok();
}

Expected<AudioClip> read_audio_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    return not_found(path, ": no such file (expected an audio file)");
  if (std::filesystem::is_directory(status))
    return invalid_argument(path, ": is a directory, expected an audio file");
  if (std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size == 0) return invalid_argument(path, ": is empty (0 bytes), expected audio");
    // The header of a WAV says how much data follows: a shorter file lost its end.
    std::ifstream in(path, std::ios::binary);
    std::string head(static_cast<std::size_t>(std::min<std::uintmax_t>(size, 1 << 16)), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (!ec) VOXRT_RETURN_IF_ERROR(check_wav_complete(head, size, path));
  }
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> file(sf_open(path.c_str(), SFM_READ, &info));
  if (!file) {
    return io_error(path,
                    ": expected an audio file libsndfile can read, found: ", sf_strerror(nullptr));
  }
  return read_clip(file.get(), info, path);
}

bool looks_like_audio_file(std::span<const std::uint8_t> bytes) {
  auto starts = [&](std::string_view magic, std::size_t at = 0) {
    return bytes.size() >= at + magic.size() &&
           std::equal(magic.begin(), magic.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at),
                      [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
  };
  return (starts("RIFF") && starts("WAVE", 8)) || (starts("RF64") && starts("WAVE", 8)) ||
         starts("fLaC") || starts("OggS") || (starts("FORM") && starts("AIF", 8)) ||
         starts("\x1A\x45\xDF\xA3") || starts("ftyp", 4);
}

Expected<AudioClip> read_audio_bytes(std::string_view bytes, std::string_view source_name) {
  VOXRT_ASSIGN_OR_RETURN(auto reader, EncodedAudioReader::open(std::string(bytes), source_name));
  AudioClip clip;
  clip.sample_rate_hz = reader->sample_rate_hz();
  clip.source_channels = reader->source_channels();
  constexpr std::size_t kPieceFrames = std::size_t{1} << 16;
  for (;;) {
    VOXRT_ASSIGN_OR_RETURN(std::size_t got, reader->read(kPieceFrames, clip.samples));
    if (got == 0) break;
  }
  return clip;
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
