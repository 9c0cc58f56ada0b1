// Transcripts as subtitle files: SubRip (.srt) and WebVTT (.vtt), one cue per utterance, as
// whisper.cpp writes them and OpenAI's response_format=srt|vtt returns them.
#pragma once

#include <string>
#include <vector>

namespace voxrt::decode {

struct TimedText {
  double start_s = 0.0;
  double end_s = 0.0;
  std::string text;
};

// "HH:MM:SS,mmm" (SubRip) or "HH:MM:SS.mmm" (WebVTT); negative times print as 0.
std::string subtitle_timestamp(double seconds, char millis_separator);
// Cues numbered from 1, a blank line after each; empty texts are left out.
std::string to_srt(const std::vector<TimedText>& cues);
// "WEBVTT", a blank line, then the cues.
std::string to_vtt(const std::vector<TimedText>& cues);

}  // namespace voxrt::decode
