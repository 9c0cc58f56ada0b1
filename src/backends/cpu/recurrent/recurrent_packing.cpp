#include "backends/cpu/recurrent/recurrent_packing.h"

#include <span>

#include "voxrt/dtype.h"

namespace voxrt::backends::cpu::recurrent {
namespace {

// Packs rows [gate * hidden + unit] for the listed gates of a [G*H, depth] matrix.
PackedPanels pack_panels(const float* matrix, std::int64_t hidden, std::int64_t depth,
                         const std::vector<int>& gates, std::int64_t blocks,
                         RecurrentWeightStorage storage) {
  PackedPanels packed;
  packed.gates = static_cast<int>(gates.size());
  packed.depth = depth;
  packed.blocks = blocks;
  const Dims dims{blocks * depth * packed.gates * kUnitBlock};
  if (storage == RecurrentWeightStorage::kInt8) {
    // Each row (gate, unit) quantized alone, then laid out in quads of k.
    const std::int64_t quads = packed.quads();
    packed.data = Tensor::zeros(DType::kI8, {blocks * quads * packed.gates * kUnitBlock * 4});
    packed.int8_scales.assign(static_cast<std::size_t>(blocks * packed.gates * kUnitBlock), 0.0f);
    packed.int8_row_sums.assign(packed.int8_scales.size(), 0);
    std::int8_t* out = packed.data.data<std::int8_t>();
    for (int g = 0; g < packed.gates; ++g) {
      const quantized::RowQuantizedWeights rows =
          quantized::quantize_rows(matrix + gates[g] * hidden * depth, hidden, depth, depth);
      for (std::int64_t unit = 0; unit < hidden; ++unit) {
        const std::int64_t block = unit / kUnitBlock, lane = unit % kUnitBlock;
        const auto at = static_cast<std::size_t>((block * packed.gates + g) * kUnitBlock + lane);
        std::int32_t sum = 0;
        for (std::int64_t k = 0; k < depth; ++k) {
          const std::int8_t q = rows.values[static_cast<std::size_t>(unit * depth + k)];
          out[(((block * quads + k / 4) * packed.gates + g) * kUnitBlock + lane) * 4 + k % 4] = q;
          sum += q;
        }
        packed.int8_scales[at] = rows.scales[static_cast<std::size_t>(unit)];
        packed.int8_row_sums[at] = 128 * sum;
      }
    }
    return packed;
  }
  if (storage == RecurrentWeightStorage::kFp16) {
    // Packed in FP32 first, then rounded once (to nearest even); padding stays +0.
    const PackedPanels wide =
        pack_panels(matrix, hidden, depth, gates, blocks, RecurrentWeightStorage::kFp32);
    packed.data = Tensor::uninitialized(DType::kF16, dims);
    const std::span<const float> from = wide.data.span<float>();
    std::uint16_t* to = packed.data.data<std::uint16_t>();
    for (std::size_t i = 0; i < from.size(); ++i) to[i] = float_to_half_bits(from[i]);
    return packed;
  }
  packed.data = Tensor::zeros(DType::kF32, dims);
  float* out = packed.data.data<float>();
  for (std::int64_t block = 0; block < blocks; ++block) {
    for (std::int64_t k = 0; k < depth; ++k) {
      for (int g = 0; g < packed.gates; ++g) {
        for (std::int64_t lane = 0; lane < kUnitBlock; ++lane) {
          const std::int64_t unit = block * kUnitBlock + lane;
          const std::int64_t index = ((block * depth + k) * packed.gates + g) * kUnitBlock + lane;
          out[index] = unit < hidden ? matrix[(gates[g] * hidden + unit) * depth + k] : 0.0f;
        }
      }
    }
  }
  return packed;
}

}  // namespace

PackedWeights pack_weights(const RecurrentSpec& spec, const Tensor& w, const Tensor& r,
                           const Tensor* b, const Tensor* p, RecurrentWeightStorage r_storage,
                           const quantized::ActivationQuantization* input_quantization) {
  const std::int64_t hidden = spec.hidden_size;
  const std::int64_t input = spec.input_size;
  const std::int64_t gate_rows = spec.gates * hidden;
  PackedWeights packed;
  packed.blocks = (hidden + kUnitBlock - 1) / kUnitBlock;
  const std::int64_t blocks = packed.blocks;
  const bool split_candidate = spec.cell == CellKind::kGru && !spec.linear_before_reset;
  std::vector<int> all_gates;
  for (int g = 0; g < spec.gates; ++g) all_gates.push_back(g);

  for (int d = 0; d < spec.num_directions; ++d) {
    PackedDirection dir;
    const float* w_d = w.data<float>() + d * gate_rows * input;
    const float* r_d = r.data<float>() + d * gate_rows * hidden;
    dir.w_kn = Tensor::zeros(DType::kF32, {input, blocks * spec.gates * kUnitBlock});
    float* w_kn = dir.w_kn.data<float>();
    for (std::int64_t k = 0; k < input; ++k) {
      for (std::int64_t unit = 0; unit < hidden; ++unit) {
        const std::int64_t block = unit / kUnitBlock, lane = unit % kUnitBlock;
        for (int g = 0; g < spec.gates; ++g) {
          w_kn[(k * blocks + block) * spec.gates * kUnitBlock + g * kUnitBlock + lane] =
              w_d[(g * hidden + unit) * input + k];
        }
      }
    }
    if (split_candidate) {
      dir.r = pack_panels(r_d, hidden, hidden, {0, 1}, blocks, r_storage);
      dir.r_candidate = pack_panels(r_d, hidden, hidden, {2}, blocks, r_storage);
    } else {
      dir.r = pack_panels(r_d, hidden, hidden, all_gates, blocks, r_storage);
    }
    dir.projection_bias.assign(static_cast<std::size_t>(blocks * spec.gates * kUnitBlock), 0.0f);
    dir.candidate_r_bias.assign(static_cast<std::size_t>(blocks * kUnitBlock), 0.0f);
    dir.peephole.assign(static_cast<std::size_t>(blocks * 3 * kUnitBlock), 0.0f);
    for (std::int64_t unit = 0; unit < hidden; ++unit) {
      const std::int64_t block = unit / kUnitBlock, lane = unit % kUnitBlock;
      if (b) {
        const float* wb = b->data<float>() + d * 2 * gate_rows;
        const float* rb = wb + gate_rows;
        for (int g = 0; g < spec.gates; ++g) {
          const std::int64_t row = g * hidden + unit;
          const bool r_bias_inside =
              spec.cell == CellKind::kGru && g == 2 && spec.linear_before_reset;
          dir.projection_bias[(block * spec.gates + g) * kUnitBlock + lane] =
              wb[row] + (r_bias_inside ? 0.0f : rb[row]);
          if (r_bias_inside) dir.candidate_r_bias[block * kUnitBlock + lane] = rb[row];
        }
      }
      if (p) {
        for (int g = 0; g < 3; ++g) {
          dir.peephole[(block * 3 + g) * kUnitBlock + lane] =
              p->data<float>()[d * 3 * hidden + g * hidden + unit];
        }
      }
    }
    if (r_storage == RecurrentWeightStorage::kInt8 && input_quantization) {
      // W's rows in the projection's column order (block, gate, lane); padded units get zero
      // rows. Quantized per row as every INT8 weight is.
      const std::int64_t columns = blocks * spec.gates * kUnitBlock;
      std::vector<float> by_column(static_cast<std::size_t>(columns * input), 0.0f);
      for (std::int64_t k = 0; k < input; ++k) {
        for (std::int64_t col = 0; col < columns; ++col)
          by_column[static_cast<std::size_t>(col * input + k)] = w_kn[k * columns + col];
      }
      dir.w_int8 = quantized::pack_int8_weights(
          quantized::quantize_rows(by_column.data(), columns, input, input));
      dir.w_int8_epilogue = quantized::make_int8_epilogue(*dir.w_int8, *input_quantization, 1.0f,
                                                          dir.projection_bias.data());
    }
    packed.directions.push_back(std::move(dir));
  }
  return packed;
}

}  // namespace voxrt::backends::cpu::recurrent
