// Views of CTC log-probability matrices as the acoustic model emits them: [frames, vocab] per
// stream, [batch, frames, vocab] for a batch. Row-major natural-log posteriors (log-softmax).
#pragma once

#include <cstdint>

namespace voxrt::decode {

struct LogProbView {
  const float* data = nullptr;
  int frames = 0;
  int vocab_size = 0;

  const float* frame(int t) const { return data + static_cast<std::int64_t>(t) * vocab_size; }
};

struct BatchLogProbView {
  const float* data = nullptr;
  int batch = 0;
  int frames = 0;
  int vocab_size = 0;

  LogProbView stream(int b) const {
    return {data + static_cast<std::int64_t>(b) * frames * vocab_size, frames, vocab_size};
  }
};

}  // namespace voxrt::decode
