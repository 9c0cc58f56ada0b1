// The two calibration sources of include/voxrt/calibration.h: tensor sets (any model) and audio
// through the model's own front end (speech models).
#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "audio/audio_io.h"
#include "audio/feature_config.h"
#include "audio/feature_extractor.h"
#include "audio/resampler.h"
#include "onnx_import/importer.h"
#include "runtime/byte_stream.h"
#include "voxrt/calibration.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;

// Names and sizes of `files` (relative to `root`), hashed: what the calibration cache compares.
std::string files_fingerprint(const fs::path& root, const std::vector<fs::path>& files) {
  std::string listing;
  for (const auto& f : files) {
    std::error_code error;
    const auto bytes = fs::file_size(f, error);
    listing += str_cat(fs::relative(f, root, error).generic_string(), " ", error ? 0 : bytes, "\n");
  }
  return str_cat(files.size(), " files ", std::hex,
                 runtime::fnv1a64(listing.data(), listing.size()));
}

// The number in "test_data_set_12" (for numeric order), or -1.
long set_number(const fs::path& dir) {
  const std::string name = dir.filename().string();
  const std::string prefix = "test_data_set_";
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return -1;
  long n = 0;
  for (char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::vector<fs::path> tensor_set_dirs(const fs::path& dir) {
  std::vector<std::pair<long, fs::path>> numbered;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_directory() && set_number(entry.path()) >= 0)
      numbered.emplace_back(set_number(entry.path()), entry.path());
  }
  std::sort(numbered.begin(), numbered.end());
  std::vector<fs::path> dirs;
  for (auto& [n, path] : numbered) dirs.push_back(std::move(path));
  return dirs;
}

class TensorSetSource final : public CalibrationSource {
 public:
  TensorSetSource(fs::path root, std::vector<fs::path> sets)
      : root_(std::move(root)), sets_(std::move(sets)) {}

  Status prepare(const CalibrationModelInfo& model) override {
    model_ = model;
    return Status::ok();
  }
  std::string describe() const override {
    return str_cat(sets_.size(), " tensor set(s) (test_data_set_N/input_K.pb) in ", root_.string());
  }
  std::string fingerprint() const override {
    std::vector<fs::path> files;
    for (const auto& set : sets_) {
      for (std::size_t k = 0; fs::exists(set / str_cat("input_", k, ".pb")); ++k)
        files.push_back(set / str_cat("input_", k, ".pb"));
    }
    return "tensor sets: " + files_fingerprint(root_, files);
  }
  int stream_count() const override { return static_cast<int>(sets_.size()); }

  // One run per set. input_K.pb is the input of that name when the file names one the model
  // has, else the model's K-th input (as `voxrt check` reads them).
  Expected<std::vector<CalibrationChunk>> stream(int index) override {
    const fs::path& set = sets_.at(static_cast<std::size_t>(index));
    CalibrationChunk chunk;
    for (std::size_t k = 0; fs::exists(set / str_cat("input_", k, ".pb")); ++k) {
      const std::string path = (set / str_cat("input_", k, ".pb")).string();
      std::string name;
      VOXRT_ASSIGN_OR_RETURN(Tensor tensor, onnx_import::read_tensor_proto_file(path, &name));
      const auto named = std::find_if(model_.inputs.begin(), model_.inputs.end(),
                                      [&](const auto& input) { return input.name == name; });
      if (named == model_.inputs.end()) {
        if (k >= model_.inputs.size()) {
          return invalid_argument(path, ": the model has ", model_.inputs.size(),
                                  " input(s), this is input ", k, " and names none of them ('",
                                  name, "')");
        }
        name = model_.inputs[k].name;
      }
      chunk[name] = std::move(tensor);
    }
    for (const auto& input : model_.inputs) {
      if (!input.state && !chunk.count(input.name)) {
        return invalid_argument(set.string(), ": no input_K.pb gives the model's input '",
                                input.name, "'");
      }
    }
    return std::vector<CalibrationChunk>{std::move(chunk)};
  }

 private:
  fs::path root_;
  std::vector<fs::path> sets_;
  CalibrationModelInfo model_;
};

bool is_audio_file(const fs::path& path) {
  static const std::set<std::string> extensions = {".wav", ".flac", ".ogg", ".oga", ".aiff",
                                                   ".aif", ".au",   ".caf", ".mp3", ".opus"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return extensions.count(ext) != 0;
}

class AudioSource final : public CalibrationSource {
 public:
  AudioSource(fs::path root, std::vector<fs::path> files)
      : root_(std::move(root)), files_(std::move(files)) {}

  Status prepare(const CalibrationModelInfo& model) override {
    const std::string where = "audio calibration data";
    VOXRT_ASSIGN_OR_RETURN(features_, audio::FeatureConfig::from_metadata(model.metadata));
    VOXRT_RETURN_IF_ERROR(features_.validate());
    auto chunk = model.metadata.find("voxrt.chunk_frames");
    if (chunk == model.metadata.end()) {
      return invalid_argument(where, ": the model's metadata has no voxrt.chunk_frames, so it ",
                              "is not a streaming speech model; give tensor sets ",
                              "(test_data_set_N/input_K.pb) instead");
    }
    chunk_frames_ = std::atoi(chunk->second.c_str());
    auto shift = model.metadata.find("voxrt.shift_frames");
    shift_frames_ =
        shift == model.metadata.end() ? chunk_frames_ : std::atoi(shift->second.c_str());
    auto sub = model.metadata.find("voxrt.subsampling");
    subsampling_ = sub == model.metadata.end() ? 1 : std::max(1, std::atoi(sub->second.c_str()));
    if (chunk_frames_ <= 0 || shift_frames_ <= 0 || shift_frames_ > chunk_frames_) {
      return invalid_argument(where, ": voxrt.chunk_frames ", chunk_frames_,
                              " / voxrt.shift_frames ", shift_frames_,
                              ": expected 0 < shift <= chunk");
    }
    const CalibrationModelInfo::Input* features = nullptr;
    for (const auto& input : model.inputs) {
      if (input.state) continue;
      if (features) {
        return invalid_argument(where, ": the model has more than one input that is not a ",
                                "state ('", features->name, "', '", input.name,
                                "'); audio fills one features input only");
      }
      features = &input;
    }
    if (!features || features->dims.size() != 3 || features->dtype != DType::kF32) {
      return invalid_argument(
          where, ": expected one f32 features input [batch, frames, bins]",
          features ? str_cat(", found '", features->name, "' of rank ", features->dims.size())
                   : std::string(", found none"));
    }
    if (features->dims[2] >= 0 && features->dims[2] != features_.output_dim()) {
      return invalid_argument(where, ": input '", features->name, "' takes ", features->dims[2],
                              " values per frame, the front end gives ", features_.output_dim());
    }
    features_input_ = features->name;
    // A dynamic frame axis also takes the last, shorter chunk of a recording.
    tail_chunks_ = features->dims[1] < 0;
    return Status::ok();
  }
  std::string describe() const override {
    const std::string files = str_cat(files_.size(), " audio file(s) in ", root_.string());
    if (chunk_frames_ == 0) return files;  // before prepare(): the front end is not known yet
    return str_cat(files, " through the model's front end (",
                   audio::feature_type_name(features_.type), ", ", features_.output_dim(),
                   " values per frame), ", chunk_frames_, "-frame chunks every ", shift_frames_,
                   " frames");
  }
  std::string fingerprint() const override {
    return str_cat("audio: ", files_fingerprint(root_, files_), "; front end ",
                   features_.to_string(), "; chunks ", chunk_frames_, "/", shift_frames_, "/",
                   subsampling_, tail_chunks_ ? " with tails" : "");
  }
  int stream_count() const override { return static_cast<int>(files_.size()); }

  Expected<std::vector<CalibrationChunk>> stream(int index) override {
    const std::string path = files_.at(static_cast<std::size_t>(index)).string();
    VOXRT_ASSIGN_OR_RETURN(audio::AudioClip clip, audio::read_audio_file(path));
    std::vector<float> samples = std::move(clip.samples);
    if (clip.sample_rate_hz != features_.sample_rate_hz) {
      VOXRT_ASSIGN_OR_RETURN(
          samples, audio::resample(samples, clip.sample_rate_hz, features_.sample_rate_hz));
    }
    auto computed = audio::compute_features(features_, samples);
    if (!computed) return computed.status().with_context(path);
    const std::vector<float>& frames = *computed;
    const std::int64_t dim = features_.output_dim();
    const std::int64_t total = static_cast<std::int64_t>(frames.size()) / dim;
    std::vector<CalibrationChunk> chunks;
    // As a live stream: a chunk every shift_frames, each chunk_frames long (the lookahead
    // overlaps the next one).
    for (std::int64_t start = 0; start < total; start += shift_frames_) {
      std::int64_t length = std::min<std::int64_t>(chunk_frames_, total - start);
      if (length < chunk_frames_) {
        if (!tail_chunks_) break;
        length = length / subsampling_ * subsampling_;
        if (length == 0) break;
      }
      Tensor t = Tensor::uninitialized(DType::kF32, {1, length, dim});
      std::copy_n(frames.begin() + start * dim, length * dim, t.data<float>());
      CalibrationChunk chunk;
      chunk[features_input_] = std::move(t);
      chunks.push_back(std::move(chunk));
      if (start + chunk_frames_ >= total) break;
    }
    return chunks;
  }

 private:
  fs::path root_;
  std::vector<fs::path> files_;
  audio::FeatureConfig features_;
  std::string features_input_;
  int chunk_frames_ = 0, shift_frames_ = 0, subsampling_ = 1;
  bool tail_chunks_ = false;
};

}  // namespace

std::string_view calibrator_name(Calibrator calibrator) {
  switch (calibrator) {
    case Calibrator::kEntropy: return "entropy";
    case Calibrator::kMinMax: return "minmax";
    case Calibrator::kPercentile: return "percentile";
  }
  return "?";
}

Expected<Calibrator> calibrator_from_name(std::string_view name) {
  for (Calibrator c : {Calibrator::kEntropy, Calibrator::kMinMax, Calibrator::kPercentile}) {
    if (calibrator_name(c) == name) return c;
  }
  return invalid_argument("calibrator '", name, "': expected entropy, minmax or percentile");
}

Expected<std::shared_ptr<CalibrationSource>> make_tensor_set_calibration_source(
    const std::string& dir) {
  std::vector<fs::path> sets = tensor_set_dirs(dir);
  if (sets.empty()) {
    return not_found("calibration data '", dir, "': no test_data_set_N folders");
  }
  return std::shared_ptr<CalibrationSource>(
      std::make_shared<TensorSetSource>(dir, std::move(sets)));
}

Expected<std::shared_ptr<CalibrationSource>> make_audio_calibration_source(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file() && is_audio_file(it->path())) files.push_back(it->path());
  }
  if (error) return not_found("calibration data '", dir, "': ", error.message());
  if (files.empty()) {
    return not_found("calibration data '", dir, "': no audio files (.wav, .flac, ...) in it");
  }
  // Sorted, so the same folder gives the same order (and the same histograms) every time.
  std::sort(files.begin(), files.end());
  return std::shared_ptr<CalibrationSource>(std::make_shared<AudioSource>(dir, std::move(files)));
}

Expected<std::shared_ptr<CalibrationSource>> make_calibration_source(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return not_found("calibration data '", dir, "': not a folder");
  }
  if (!tensor_set_dirs(dir).empty()) return make_tensor_set_calibration_source(dir);
  auto audio = make_audio_calibration_source(dir);
  if (!audio) {
    return not_found("calibration data '", dir, "': neither test_data_set_N folders ",
                     "(input_K.pb tensors) nor audio files (.wav, .flac, ...)");
  }
  return audio;
}

}  // namespace voxrt
