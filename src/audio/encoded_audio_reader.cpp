#include "audio/encoded_audio_reader.h"

#include "audio/audio_io.h"
#include "audio/compressed_audio_reader.h"

#include <sndfile.h>

#include <algorithm>
#include <cstring>

namespace voxrt::audio {
namespace {

// libsndfile's virtual I/O over a byte buffer: no temporary file.
struct MemoryFile {
  std::string bytes;
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

// The libsndfile reader.
class SndfileAudioReader : public EncodedAudioReader {
 public:
  SndfileAudioReader(std::string bytes, std::string_view source_name) {
    memory_.bytes = std::move(bytes);
    name_ = std::string(source_name);
  }
  ~SndfileAudioReader() override {
    if (file_) sf_close(file_);
  }
  Status open() {
    file_ = sf_open_virtual(&io_, SFM_READ, &info_, &memory_);
    if (!file_) {
      return invalid_argument(
          name_, ": expected audio libsndfile can read, found: ", sf_strerror(nullptr));
    }
    if (info_.channels < 1 || info_.channels > 1024)
      return corrupt(name_, ": expected 1 to 1024 channels, found ", info_.channels);
    if (info_.samplerate < 1)
      return corrupt(name_, ": expected a positive sample rate, found ", info_.samplerate);
    return Status::ok();
  }
  // The file's bytes, for another reader to try (after a failed open()).
  std::string release_bytes() { return std::move(memory_.bytes); }
  int sample_rate_hz() const override { return info_.samplerate; }
  int source_channels() const override { return info_.channels; }
  std::optional<long long> declared_frames() const override {
    if (info_.frames <= 0 || info_.frames == SF_COUNT_MAX) return std::nullopt;
    return static_cast<long long>(info_.frames);
  }

 protected:
  Expected<std::size_t> read_frames(std::size_t max_frames, std::vector<float>& out) override {
    const int channels = info_.channels;
    // Blocks of at most 4096 frames, so the scratch buffer stays small whatever is asked.
    constexpr std::size_t kBlockFrames = 4096;
    block_.resize(kBlockFrames * static_cast<std::size_t>(channels));
    std::size_t total = 0;
    while (total < max_frames) {
      const auto want = static_cast<sf_count_t>(std::min(kBlockFrames, max_frames - total));
      const sf_count_t got = sf_readf_float(file_, block_.data(), want);
      if (got <= 0) break;
      for (sf_count_t f = 0; f < got; ++f) {
        float sum = 0.0f;
        for (int c = 0; c < channels; ++c) sum += block_[f * channels + c];
        out.push_back(channels == 1 ? sum : sum / static_cast<float>(channels));
      }
      total += static_cast<std::size_t>(got);
    }
    if (sf_error(file_) != SF_ERR_NO_ERROR) {
      return io_error(name_, ": reading samples failed after ", frames_read() + total,
                      " frames: ", sf_strerror(file_));
    }
    return total;
  }

 private:
  MemoryFile memory_;
  SF_VIRTUAL_IO io_{memory_length, memory_seek, memory_read, memory_write, memory_tell};
  SF_INFO info_{};
  SNDFILE* file_ = nullptr;
  std::string name_;
  std::vector<float> block_;  // interleaved frames of one read
};

}  // namespace

Expected<std::unique_ptr<EncodedAudioReader>> EncodedAudioReader::open(
    std::string bytes, std::string_view source_name) {
  // A WAV shorter than its header says lost its end (an upload or a pipe cut short).
  VOXRT_RETURN_IF_ERROR(check_wav_complete(bytes, bytes.size(), source_name));
  // libsndfile first (it reads the header only); what it cannot open may be a browser's
  // recording, which goes to FFmpeg.
  auto sndfile = std::make_unique<SndfileAudioReader>(std::move(bytes), source_name);
  const Status opened = sndfile->open();
  if (opened) return std::unique_ptr<EncodedAudioReader>(std::move(sndfile));
  if (opened.code() != StatusCode::kInvalidArgument) return opened;
  auto compressed = open_compressed_reader(sndfile->release_bytes(), source_name);
  if (compressed || compressed.status().code() != StatusCode::kInvalidArgument) return compressed;
  return invalid_argument(source_name,
                          ": expected audio libsndfile (WAV, FLAC, Ogg, MP3, ...) or FFmpeg "
                          "(WebM, Matroska, MP4/M4A) can read, found neither: ",
                          opened.message());
}

Expected<std::size_t> EncodedAudioReader::read(std::size_t max_frames, std::vector<float>& out) {
  VOXRT_ASSIGN_OR_RETURN(std::size_t got, read_frames(max_frames, out));
  frames_read_ += static_cast<long long>(got);
  return got;
}

}  // namespace voxrt::audio
