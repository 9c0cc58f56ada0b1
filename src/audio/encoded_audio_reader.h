// Decodes an audio file held in memory (an HTTP upload) piece by piece, downmixed to mono, so a
// small compressed file that expands to hours of samples never sits decoded in memory at once
// (docs/security.md: a 59 KB FLAC of 4 h of silence used to add 1.55 GB). Two kinds of reader
// stand behind it: libsndfile's (WAV, FLAC, Ogg, MP3, AIFF, ...) and FFmpeg's for the recordings
// browsers make (WebM/Opus, MP4/AAC; compressed_audio_reader.h); open() tries them in that order.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::audio {

class EncodedAudioReader {
 public:
  // `bytes` is moved in and owned by the reader; `source_name` goes into error messages.
  static Expected<std::unique_ptr<EncodedAudioReader>> open(std::string bytes,
                                                            std::string_view source_name);
  virtual ~EncodedAudioReader() = default;

  virtual int sample_rate_hz() const = 0;
  virtual int source_channels() const = 0;
  // The frame count the header declares, when it declares one. A hint only: a corrupt or hostile
  // header may claim anything, so callers also count what read() returns.
  virtual std::optional<long long> declared_frames() const = 0;

  // Appends up to `max_frames` mono samples to `out`; returns how many (0 at the end of the file).
  Expected<std::size_t> read(std::size_t max_frames, std::vector<float>& out);
  long long frames_read() const { return frames_read_; }

 protected:
  // Appends up to max_frames samples (fewer only at the end).
  virtual Expected<std::size_t> read_frames(std::size_t max_frames, std::vector<float>& out) = 0;

 private:
  long long frames_read_ = 0;
};

}  // namespace voxrt::audio
