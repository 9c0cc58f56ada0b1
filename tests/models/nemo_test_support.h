// What the NeMo model tests share (nemo_ctc_test, nemo_cache_aware_test: both;
// nemo_transducer_test: the clips, its import sets a beam of 1): importing an exported folder the
// way `voxrt build
// --model-dir` does, without autotuning, and their three test clips.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "audio/audio_io.h"
#include "model_import/model_dir_import.h"
#include "model_test_files.h"

namespace voxrt::model_test {

inline Expected<model_import::ModelDirImportReport> import_dir(
    const std::filesystem::path& dir, const std::filesystem::path& bundle) {
  model_import::ModelDirImportOptions options;
  options.model_dir = dir.string();
  options.bundle_dir = bundle.string();
  options.build.autotune = false;
  options.max_batch = 8;
  return model_import::import_model_dir(options);
}

// Three clips of different lengths, as wav paths: the bundled recording; it reversed after a
// 0.3 s pause and then again at half the level (several times longer); and a short one whose
// length is not a whole number of hops. The last two are written into `work_dir`.
inline Expected<std::vector<std::string>> write_three_clips(const std::filesystem::path& source_dir,
                                                            const std::filesystem::path& work_dir) {
  const std::string sample = (source_dir / "samples/play_music.wav").string();
  VOXRT_ASSIGN_OR_RETURN(audio::AudioClip clip, audio::read_audio_file(sample));
  std::vector<std::string> wavs = {sample, (work_dir / "spliced.wav").string(),
                                   (work_dir / "short.wav").string()};
  std::vector<float> spliced(4800, 0.0f);
  spliced.insert(spliced.end(), clip.samples.rbegin(), clip.samples.rend());
  for (float s : clip.samples) spliced.push_back(0.5f * s);
  write_wav(wavs[1], spliced);
  write_wav(wavs[2], std::vector<float>(clip.samples.begin(), clip.samples.begin() + 12345));
  return wavs;
}

}  // namespace voxrt::model_test
