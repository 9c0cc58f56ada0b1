// The CPU attention family's table: which tactics run an Attention node and their factories.
#include "backends/cpu/attention/attention_kernels.h"
#include "backends/cpu/cpu_backend.h"

namespace voxrt::backends::cpu {

namespace attention {

bool attention_supports(const ir::Node& node) {
  if (node.op != ir::OpKind::kAttention || node.inputs.size() < 3 || node.inputs.size() > 5)
    return false;
  for (std::size_t i = 0; i < 3; ++i) {
    if (!node.input(i) || node.input(i)->dtype != DType::kF32) return false;
  }
  const ir::Value* mask = node.input(3);
  const ir::Value* bias = node.input(4);
  if (mask && mask->dtype != DType::kBool && mask->dtype != DType::kF32) return false;
  if (bias && bias->dtype != DType::kF32) return false;
  return node.output(0) && ir::attention_params(node).has_value();
}

}  // namespace attention

std::vector<TacticInfo> attention_tactics(const ir::Node& node) {
  if (!attention::attention_supports(node)) return {};
  std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"}};
  if (cpu_has_avx512f()) tactics.push_back({attention::kAvx512StripsTactic, "avx512_strips"});
  return tactics;
}

std::string attention_scratch_note(const ir::Node& node, TacticId tactic,
                                   std::span<const Dims> input_dims) {
  auto params = ir::attention_params(node);
  if (!params || input_dims.size() < 3) return {};
  auto dims = ir::attention_dims(node.describe(), params->layout, input_dims[0], input_dims[1],
                                 input_dims[2]);
  if (!dims) return {};
  const std::int64_t full_mib =
      (dims->batch * dims->heads * dims->q_len * dims->kv_len * 4 + (1 << 19)) >> 20;
  const std::string full =
      str_cat("the unfused graph's scores would be B x H x Sq x Sk = ", dims->batch, " x ",
              dims->heads, " x ", dims->q_len, " x ", dims->kv_len, " floats (", full_mib, " MiB)");
  if (tactic == attention::kAvx512StripsTactic) {
    return str_cat("attention: scores held 6 x Sk floats (", (6 * dims->kv_len * 4 + 1023) / 1024,
                   " KiB) and K^T of one head (", (dims->kv_len * dims->key_dim * 4 + 1023) / 1024,
                   " KiB) per thread; ", full, ", never materialized");
  }
  return str_cat("attention (reference): one query row's scores at a time; ", full);
}

Expected<std::unique_ptr<Kernel>> make_attention_kernel(const ir::Node& node, TacticId tactic) {
  VOXRT_ASSIGN_OR_RETURN(const ir::AttentionParams params, ir::attention_params(node));
  if (!attention::attention_supports(node)) {
    return unsupported(node.describe(),
                       ": the CPU attention kernels take f32 Q, K, V, a bool or f32 mask and an "
                       "f32 bias");
  }
  if (tactic == kReferenceTactic) return attention::make_reference_attention_kernel(node, params);
  if (tactic == attention::kAvx512StripsTactic && cpu_has_avx512f())
    return attention::make_avx512_attention_kernel(node, params);
  return unsupported(node.describe(), ": attention tactic ", tactic,
                     " is not available (0 reference; 1 avx512_strips needs AVX-512)");
}

}  // namespace voxrt::backends::cpu
