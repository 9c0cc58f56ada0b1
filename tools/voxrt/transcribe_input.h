// What `voxrt transcribe` reads: audio files, or stdin ("-"), where an audio file's header (a WAV
// piped in) is recognised and read as a file, and anything else is raw PCM as the --stdin-*
// flags describe it.
#pragma once

#include <string>

#include "audio/audio_io.h"

namespace voxrt::cli {

struct RawPcmFormat {
  audio::PcmEncoding encoding = audio::PcmEncoding::kS16LE;
  int sample_rate_hz = 16000;
  int channels = 1;
};

struct TranscribeInput {
  audio::AudioClip clip;
  // stdin held an audio file (its own rate and channels were used, not the --stdin-* flags).
  bool stdin_was_file = false;
};

// `name` is a path or "-". Errors name the input and say what was expected and found.
Expected<TranscribeInput> read_transcribe_input(const std::string& name, const RawPcmFormat& raw);

}  // namespace voxrt::cli
