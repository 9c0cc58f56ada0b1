#include "decode/subtitles.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace voxrt::decode {

std::string subtitle_timestamp(double seconds, char millis_separator) {
  const long long total_ms = std::llround(std::max(0.0, seconds) * 1000.0);
  char text[32];
  std::snprintf(text, sizeof(text), "%02lld:%02lld:%02lld%c%03lld", total_ms / 3600000,
                total_ms / 60000 % 60, total_ms / 1000 % 60, millis_separator, total_ms % 1000);
  return text;
}

std::string to_srt(const std::vector<TimedText>& cues) {
  std::string out;
  int number = 0;
  for (const TimedText& cue : cues) {
    if (cue.text.empty()) continue;
    out += std::to_string(++number) + "\n" + subtitle_timestamp(cue.start_s, ',') + " --> " +
           subtitle_timestamp(cue.end_s, ',') + "\n" + cue.text + "\n\n";
  }
  return out;
}

std::string to_vtt(const std::vector<TimedText>& cues) {
  std::string out = "WEBVTT\n\n";
  for (const TimedText& cue : cues) {
    if (cue.text.empty()) continue;
    out += subtitle_timestamp(cue.start_s, '.') + " --> " + subtitle_timestamp(cue.end_s, '.') +
           "\n" + cue.text + "\n\n";
  }
  return out;
}

}  // namespace voxrt::decode
