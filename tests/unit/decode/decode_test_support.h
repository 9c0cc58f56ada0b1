// Constructed CTC posteriors with known answers for the decoder tests.
#pragma once

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decode/log_probs.h"
#include "decode/vocabulary.h"

namespace voxrt::decode::testing {

// blank "_" = 0, space = 1, apostrophe, a..z: 29 units, as DS2-style English models.
inline std::shared_ptr<const Vocabulary> english_chars() {
  std::vector<std::string> tokens = {"_", " ", "'"};
  for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c);
  auto vocabulary = Vocabulary::characters(tokens, 0, " ");
  return std::make_shared<const Vocabulary>(std::move(vocabulary).value());
}

// Log-prob frames [frames, vocab]: each frame puts its listed probabilities on units and spreads
// the rest evenly over the others.
class Frames {
 public:
  explicit Frames(int vocab_size) : vocab_size_(vocab_size) {}
  Frames& add(const std::map<int, double>& probabilities) {
    double listed = 0.0;
    for (const auto& [unit, p] : probabilities) listed += p;
    const int others = vocab_size_ - static_cast<int>(probabilities.size());
    const double rest = others > 0 ? std::max(1e-12, (1.0 - listed) / others) : 0.0;
    for (int v = 0; v < vocab_size_; ++v) {
      auto it = probabilities.find(v);
      values_.push_back(
          static_cast<float>(std::log(it != probabilities.end() ? it->second : rest)));
    }
    return *this;
  }
  // One frame peaked on `unit` with probability p.
  Frames& peak(int unit, double p = 0.9) { return add({{unit, p}}); }
  Frames& blanks(int count, int blank = 0, double p = 0.95) {
    for (int i = 0; i < count; ++i) peak(blank, p);
    return *this;
  }
  Frames& append(const Frames& other) {
    values_.insert(values_.end(), other.values_.begin(), other.values_.end());
    return *this;
  }
  int frames() const { return static_cast<int>(values_.size()) / vocab_size_; }
  LogProbView view() const { return {values_.data(), frames(), vocab_size_}; }
  LogProbView view(int first, int count) const {
    return {values_.data() + static_cast<std::size_t>(first) * vocab_size_, count, vocab_size_};
  }
  const std::vector<float>& values() const { return values_; }

 private:
  int vocab_size_;
  std::vector<float> values_;
};

// Spells `text` one unit per frame with a blank after each (so repeats survive).
inline Frames spell(const Vocabulary& vocabulary, const std::string& text, double p = 0.9) {
  Frames frames(vocabulary.size());
  for (char c : text) {
    frames.peak(vocabulary.id_of(std::string(1, c)), p);
    frames.peak(vocabulary.blank_id(), p);
  }
  return frames;
}

inline std::filesystem::path scratch_dir() {
  const char* binary_dir = std::getenv("VOXRT_BINARY_DIR");
  std::filesystem::path dir = binary_dir != nullptr ? std::filesystem::path(binary_dir)
                                                    : std::filesystem::temp_directory_path();
  dir /= "test_scratch/unit_decode";
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace voxrt::decode::testing
