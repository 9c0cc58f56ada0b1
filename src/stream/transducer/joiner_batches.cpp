#include "stream/transducer/joiner_batches.h"

#include <algorithm>

namespace voxrt::stream {

Status run_joiner_in_batches(ExecutionContext& joiner, const JoinerLayout& layout,
                             std::span<const float> encoder_frames,
                             std::span<const float> decoder_out, int rows,
                             std::vector<float>& logits, long long& calls) {
  logits.clear();
  logits.reserve(static_cast<std::size_t>(rows * layout.logits_width));
  const auto input_dims = [&](std::int64_t n, std::int64_t dim) {
    switch (layout.unit_axis) {
      case JoinerLayout::UnitAxis::kTrailing: return Dims{n, dim, 1};
      case JoinerLayout::UnitAxis::kLeading: return Dims{n, 1, dim};
      case JoinerLayout::UnitAxis::kNone: break;
    }
    return Dims{n, dim};
  };
  for (std::int64_t begin = 0; begin < rows; begin += layout.max_rows) {
    const std::int64_t n = std::min<std::int64_t>(layout.max_rows, rows - begin);
    Tensor enc = Tensor::uninitialized(DType::kF32, input_dims(n, layout.encoder_dim));
    Tensor dec = Tensor::uninitialized(DType::kF32, input_dims(n, layout.decoder_dim));
    std::copy_n(encoder_frames.begin() + begin * layout.encoder_dim, n * layout.encoder_dim,
                enc.data<float>());
    std::copy_n(decoder_out.begin() + begin * layout.decoder_dim, n * layout.decoder_dim,
                dec.data<float>());
    std::vector<Tensor> inputs;
    if (layout.encoder_first) {
      inputs = {std::move(enc), std::move(dec)};
    } else {
      inputs = {std::move(dec), std::move(enc)};
    }
    VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> out, joiner.run(inputs));
    ++calls;
    const Tensor& l = out[0];
    if (l.element_count() != n * layout.logits_width) {
      logits.clear();
      return invalid_argument("transducer joiner output is ", dims_to_string(l.dims()),
                              ", expected [", n,
                              layout.unit_axis == JoinerLayout::UnitAxis::kNone ? ", " : ", 1, 1, ",
                              layout.logits_width, "]");
    }
    logits.insert(logits.end(), l.data<float>(), l.data<float>() + l.element_count());
  }
  return Status::ok();
}

}  // namespace voxrt::stream
