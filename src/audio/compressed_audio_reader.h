// Compressed audio in containers that libsndfile does not read: the recordings browsers make
// (MediaRecorder's WebM/Opus in Chromium and Firefox, MP4/AAC .m4a in Safari), decoded piece by
// piece with Debian's FFmpeg libraries (libavformat, libavcodec, libswresample). Only the
// containers and codecs listed in docs/server.md are opened, so an upload cannot reach the rest
// of FFmpeg's parsers.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "audio/encoded_audio_reader.h"

namespace voxrt::audio {

// The first audio stream of `bytes`, downmixed to mono floats at its own sample rate.
// invalid_argument when FFmpeg recognises none of the allowed containers.
Expected<std::unique_ptr<EncodedAudioReader>> open_compressed_reader(std::string bytes,
                                                                     std::string_view source_name);

}  // namespace voxrt::audio
