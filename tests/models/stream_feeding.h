// Files decoded as concurrent streams of one Recognizer, as the model tests drive the families:
// each file fed in pieces of its own size, all streams advanced together (so they share batches),
// every result handed to the caller in order.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "audio/audio_io.h"
#include "stream/recognizer.h"

namespace voxrt::model_test {

// `pieces[i]` samples per accept_pcm for file i; `options[i]` its stream options (empty: the
// defaults for all). `on_result(i, result)` gets each result of stream i.
inline void feed_files_as_streams(
    stream::Recognizer& recognizer, const std::vector<std::string>& files,
    const std::vector<std::size_t>& pieces, const std::vector<stream::StreamOptions>& options,
    const std::function<void(std::size_t, const stream::StreamResult&)>& on_result) {
  std::vector<audio::AudioClip> clips;
  std::vector<std::unique_ptr<stream::Stream>> streams;
  std::vector<stream::Stream*> all;
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto clip = audio::read_audio_file(files[i]);
    ASSERT_TRUE(clip.has_value()) << clip.status().to_string();
    clips.push_back(std::move(*clip));
    auto s = recognizer.open_stream(options.empty() ? stream::StreamOptions{} : options[i]);
    ASSERT_TRUE(s.has_value()) << s.status().to_string();
    streams.push_back(std::move(*s));
    all.push_back(streams.back().get());
  }
  std::vector<std::size_t> next(files.size(), 0);
  for (bool active = true; active;) {
    active = false;
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const auto& samples = clips[i].samples;
      if (next[i] >= samples.size()) continue;
      const std::size_t n = std::min(pieces[i], samples.size() - next[i]);
      EXPECT_TRUE(
          streams[i]->accept_pcm(std::span<const float>(samples.data() + next[i], n)).is_ok());
      next[i] += n;
      if (next[i] >= samples.size()) {
        EXPECT_TRUE(streams[i]->input_finished().is_ok());
      }
      active = true;
    }
    auto advanced = recognizer.advance(all);
    EXPECT_TRUE(advanced.has_value()) << advanced.status().to_string();
    for (std::size_t i = 0; i < streams.size(); ++i) {
      for (const auto& result : streams[i]->take_results()) on_result(i, result);
    }
  }
}

// Each stream's final texts (empty ones included), joined with '|': what the model tests
// compare with their Python references.
inline std::vector<std::string> final_texts_of_streams(
    stream::Recognizer& recognizer, const std::vector<std::string>& files,
    const std::vector<std::size_t>& pieces,
    const std::vector<stream::StreamOptions>& options = {}) {
  std::vector<std::string> texts(files.size());
  feed_files_as_streams(recognizer, files, pieces, options,
                        [&](std::size_t i, const stream::StreamResult& result) {
                          if (result.result.is_final)
                            texts[i] += (texts[i].empty() ? "" : "|") + result.result.text;
                        });
  return texts;
}

}  // namespace voxrt::model_test
