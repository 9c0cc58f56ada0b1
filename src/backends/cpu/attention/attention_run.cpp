// What every CPU attention tactic shares: operand strides and the checks of one run.
#include <initializer_list>

#include "backends/cpu/attention/attention_kernels.h"

namespace voxrt::backends::cpu::attention {

HeadStrides head_strides(ir::AttentionLayout layout, std::int64_t heads, std::int64_t length,
                         std::int64_t depth) {
  HeadStrides strides;
  strides.batch = heads * length * depth;
  if (layout == ir::AttentionLayout::kHeadsMajor) {
    strides.head = length * depth;
    strides.row = depth;
  } else {
    strides.head = depth;
    strides.row = heads * depth;
  }
  return strides;
}

ScoreStrides score_strides(const Dims& dims) {
  ScoreStrides strides;
  std::int64_t running = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    const std::size_t axis = 4 - dims.size() + i;
    strides.stride[axis] = dims[i] == 1 ? 0 : running;
    running *= dims[i];
  }
  return strides;
}

Expected<AttentionRun> prepare_run(const std::string& where, const ir::AttentionParams& params,
                                   std::span<const Tensor* const> inputs, Tensor& output) {
  if (inputs.size() < 3 || !inputs[0] || !inputs[1] || !inputs[2]) {
    return invalid_argument(where, ": Q, K and V are required");
  }
  const Tensor& q = *inputs[0];
  const Tensor& k = *inputs[1];
  const Tensor& v = *inputs[2];
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &output}) {
    if (t->dtype() != DType::kF32) {
      return unsupported(where, ": the CPU attention kernels take f32 Q, K, V, found ",
                         dtype_name(t->dtype()));
    }
  }
  AttentionRun run;
  VOXRT_ASSIGN_OR_RETURN(run.dims,
                         ir::attention_dims(where, params.layout, q.dims(), k.dims(), v.dims()));
  if (output.dims() != ir::attention_output_dims(run.dims, params.layout)) {
    return internal_error(where, ": output has dims ", dims_to_string(output.dims()), ", expected ",
                          dims_to_string(ir::attention_output_dims(run.dims, params.layout)));
  }
  const ir::AttentionDims& d = run.dims;
  run.scale = ir::attention_scale(params, d);
  run.q = head_strides(params.layout, d.heads, d.q_len, d.key_dim);
  run.k = head_strides(params.layout, d.kv_heads, d.kv_len, d.key_dim);
  run.v = head_strides(params.layout, d.kv_heads, d.kv_len, d.value_dim);
  run.out = head_strides(params.layout, d.heads, d.q_len, d.value_dim);
  run.q_data = q.data<float>();
  run.k_data = k.data<float>();
  run.v_data = v.data<float>();
  run.out_data = output.data<float>();
  const Tensor* mask = inputs.size() > 3 ? inputs[3] : nullptr;
  const Tensor* bias = inputs.size() > 4 ? inputs[4] : nullptr;
  if (mask) {
    if (!ir::broadcasts_to_scores(mask->dims(), d)) {
      return invalid_argument(where, ": the mask ", dims_to_string(mask->dims()),
                              " does not broadcast to the scores [", d.batch, ", ", d.heads, ", ",
                              d.q_len, ", ", d.kv_len, "]");
    }
    if (mask->dtype() == DType::kBool) {
      run.bool_mask = mask->data<bool>();
    } else if (mask->dtype() == DType::kF32) {
      run.float_mask = mask->data<float>();
    } else {
      return unsupported(where, ": the mask must be bool or f32, found ",
                         dtype_name(mask->dtype()));
    }
    run.mask = score_strides(mask->dims());
  }
  if (bias) {
    if (bias->dtype() != DType::kF32) {
      return unsupported(where, ": the bias must be f32, found ", dtype_name(bias->dtype()));
    }
    if (!ir::broadcasts_to_scores(bias->dims(), d)) {
      return invalid_argument(where, ": the bias ", dims_to_string(bias->dims()),
                              " does not broadcast to the scores [", d.batch, ", ", d.heads, ", ",
                              d.q_len, ", ", d.kv_len, "]");
    }
    run.bias = bias->data<float>();
    run.bias_strides = score_strides(bias->dims());
  }
  return run;
}

}  // namespace voxrt::backends::cpu::attention
