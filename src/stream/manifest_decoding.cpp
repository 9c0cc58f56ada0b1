#include "stream/manifest_decoding.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "audio/audio_io.h"
#include "decode/word_error_rate.h"

namespace voxrt::stream {

Expected<std::vector<ManifestEntry>> read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error(path, ": cannot open the manifest");
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::vector<ManifestEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::size_t begin = 0;
    for (;;) {
      const std::size_t tab = line.find('\t', begin);
      fields.push_back(line.substr(begin, tab == std::string::npos ? tab : tab - begin));
      if (tab == std::string::npos) break;
      begin = tab + 1;
    }
    if (fields.size() < 2) {
      return invalid_argument(path, ":", number,
                              ": expected path<TAB>text or id<TAB>path<TAB>text, found '", line,
                              "'");
    }
    const bool with_id = fields.size() >= 3;
    ManifestEntry entry;
    std::filesystem::path audio = fields[with_id ? 1 : 0];
    if (audio.is_relative()) audio = folder / audio;
    entry.audio_path = audio.string();
    entry.reference = fields[with_id ? 2 : 1];
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) return invalid_argument(path, ": the manifest lists no recordings");
  return entries;
}

Expected<ManifestScore> decode_manifest(Recognizer& recognizer,
                                        const std::vector<ManifestEntry>& entries,
                                        int parallel_streams) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ManifestScore score;
  score.hypotheses.resize(entries.size());
  struct Open {
    std::size_t entry = 0;
    std::unique_ptr<Stream> stream;
    audio::AudioClip clip;
    std::size_t fed = 0;
  };
  std::vector<Open> open;
  std::size_t next = 0;
  auto collect = [&](Open& o) {
    for (const auto& r : o.stream->take_results()) {
      if (!r.result.is_final || r.result.text.empty()) continue;
      std::string& text = score.hypotheses[o.entry];
      text += (text.empty() ? "" : " ") + r.result.text;
    }
  };
  while (next < entries.size() || !open.empty()) {
    while (next < entries.size() && static_cast<int>(open.size()) < std::max(1, parallel_streams)) {
      Open o;
      o.entry = next++;
      VOXRT_ASSIGN_OR_RETURN(o.clip, audio::read_audio_file(entries[o.entry].audio_path));
      StreamOptions options;
      options.sample_rate_hz = o.clip.sample_rate_hz;
      VOXRT_ASSIGN_OR_RETURN(o.stream, recognizer.open_stream(options));
      score.audio_seconds += static_cast<double>(o.clip.samples.size()) / o.clip.sample_rate_hz;
      open.push_back(std::move(o));
    }
    // 20 ms of each open file, then one batched advance, as a server round would do.
    std::vector<Stream*> streams;
    for (Open& o : open) {
      const std::size_t piece = static_cast<std::size_t>(o.clip.sample_rate_hz) / 50;
      const std::size_t end = std::min(o.clip.samples.size(), o.fed + piece);
      if (o.fed < o.clip.samples.size()) {
        VOXRT_RETURN_IF_ERROR(o.stream->accept_pcm(
            std::span<const float>(o.clip.samples.data() + o.fed, end - o.fed)));
        o.fed = end;
        if (o.fed == o.clip.samples.size()) VOXRT_RETURN_IF_ERROR(o.stream->input_finished());
      }
      streams.push_back(o.stream.get());
    }
    VOXRT_RETURN_IF_ERROR(recognizer.advance(streams).status());
    for (Open& o : open) collect(o);
    std::erase_if(open, [](const Open& o) { return o.stream->finished(); });
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto reference = decode::normalize_words(entries[i].reference);
    score.reference_words += static_cast<long long>(reference.size());
    score.word_errors +=
        decode::word_edit_distance(reference, decode::normalize_words(score.hypotheses[i]));
  }
  score.files = static_cast<int>(entries.size());
  score.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return score;
}

}  // namespace voxrt::stream
