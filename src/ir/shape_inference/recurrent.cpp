// Shape inference for GRU, LSTM and RNN (ONNX opsets 7-14, including opset 14's `layout`).
// Symbolic seq/batch dims pass through unchanged; hidden_size comes from the attribute or, when
// absent, from R's last dimension.
#include <string>

#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

int gate_count(OpKind op) {
  switch (op) {
    case OpKind::kGRU: return 3;
    case OpKind::kLSTM: return 4;
    default: return 1;
  }
}

// Checks that a known dim equals `expected` (when that is known too).
Status check_dim(const Node& node, const char* input_name, const SymShape& shape, std::size_t axis,
                 std::int64_t expected, const char* meaning) {
  if (expected < 0 || axis >= shape.size() || !shape[axis].is_known()) return Status::ok();
  if (shape[axis].value != expected) {
    return invalid_argument(node.describe(), ": input ", input_name, " has shape ",
                            sym_shape_to_string(shape), "; expected dim ", axis, " = ", expected,
                            " (", meaning, ")");
  }
  return Status::ok();
}

Status check_rank(const Node& node, const char* input_name, const ValueInfo& info,
                  std::size_t rank) {
  if (info.rank_known && info.shape.size() != rank) {
    return invalid_argument(node.describe(), ": input ", input_name, " must have rank ", rank,
                            ", found shape ", sym_shape_to_string(info.shape));
  }
  return Status::ok();
}

const ValueInfo* optional_input(std::span<const ValueInfo> inputs, std::size_t index) {
  return index < inputs.size() && inputs[index].present ? &inputs[index] : nullptr;
}

Dim dim_or_unknown(const ValueInfo& info, std::size_t axis) {
  return info.rank_known && axis < info.shape.size() ? info.shape[axis] : Dim{};
}

}  // namespace

Status infer_recurrent(const Node& node, std::span<const ValueInfo> inputs,
                       std::vector<InferredOutput>& outputs) {
  const int gates = gate_count(node.op);
  const std::size_t max_inputs = node.op == OpKind::kLSTM ? 8 : 6;
  const std::size_t max_outputs = node.op == OpKind::kLSTM ? 3 : 2;
  if (inputs.size() < 3 || inputs.size() > max_inputs || !inputs[0].present || !inputs[1].present ||
      !inputs[2].present) {
    return invalid_argument(node.describe(), ": expected inputs X, W, R and up to ", max_inputs - 3,
                            " optional ones, found ", inputs.size(), " inputs");
  }
  if (outputs.size() > max_outputs) {
    return invalid_argument(node.describe(), ": expected at most ", max_outputs, " outputs, found ",
                            outputs.size());
  }
  const ValueInfo& x = inputs[0];
  const ValueInfo& w = inputs[1];
  const ValueInfo& r = inputs[2];
  for (const ValueInfo* info : {&x, &w, &r}) {
    if (!is_floating(info->dtype) || info->dtype != x.dtype) {
      return invalid_argument(node.describe(), ": X, W and R must share one floating dtype, found ",
                              dtype_name(x.dtype), ", ", dtype_name(w.dtype), ", ",
                              dtype_name(r.dtype));
    }
  }
  VOXRT_RETURN_IF_ERROR(check_rank(node, "X", x, 3));
  VOXRT_RETURN_IF_ERROR(check_rank(node, "W", w, 3));
  VOXRT_RETURN_IF_ERROR(check_rank(node, "R", r, 3));

  const std::string direction = node.attrs.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return invalid_argument(node.describe(), ": attribute direction must be forward, reverse or ",
                            "bidirectional, found '", direction, "'");
  }
  const std::int64_t num_directions = direction == "bidirectional" ? 2 : 1;
  const std::int64_t layout = node.opset >= 14 ? node.attrs.get_int("layout", 0) : 0;
  if (layout != 0 && layout != 1) {
    return invalid_argument(node.describe(), ": attribute layout must be 0 or 1, found ", layout);
  }

  std::int64_t hidden = node.attrs.get_int("hidden_size", -1);
  if (node.attrs.has("hidden_size") && hidden <= 0) {
    return invalid_argument(node.describe(), ": attribute hidden_size must be positive, found ",
                            hidden);
  }
  if (hidden < 0 && r.rank_known && r.shape[2].is_known()) hidden = r.shape[2].value;
  if (hidden < 0 && w.rank_known && w.shape[1].is_known()) hidden = w.shape[1].value / gates;

  const std::int64_t gate_rows = hidden >= 0 ? gates * hidden : -1;
  const std::int64_t input_size = x.rank_known && x.shape[2].is_known() ? x.shape[2].value : -1;
  VOXRT_RETURN_IF_ERROR(check_dim(node, "W", w.shape, 0, num_directions, "num_directions"));
  VOXRT_RETURN_IF_ERROR(check_dim(node, "W", w.shape, 1, gate_rows, "gates * hidden_size"));
  VOXRT_RETURN_IF_ERROR(check_dim(node, "W", w.shape, 2, input_size, "input_size of X"));
  VOXRT_RETURN_IF_ERROR(check_dim(node, "R", r.shape, 0, num_directions, "num_directions"));
  VOXRT_RETURN_IF_ERROR(check_dim(node, "R", r.shape, 1, gate_rows, "gates * hidden_size"));
  VOXRT_RETURN_IF_ERROR(check_dim(node, "R", r.shape, 2, hidden, "hidden_size"));

  const Dim seq = dim_or_unknown(x, layout == 0 ? 0 : 1);
  const Dim batch = dim_or_unknown(x, layout == 0 ? 1 : 0);
  const std::int64_t batch_size = batch.is_known() ? batch.value : -1;

  if (const ValueInfo* b = optional_input(inputs, 3)) {
    if (b->dtype != x.dtype) {
      return invalid_argument(node.describe(), ": input B must have dtype ", dtype_name(x.dtype),
                              ", found ", dtype_name(b->dtype));
    }
    VOXRT_RETURN_IF_ERROR(check_rank(node, "B", *b, 2));
    VOXRT_RETURN_IF_ERROR(check_dim(node, "B", b->shape, 0, num_directions, "num_directions"));
    VOXRT_RETURN_IF_ERROR(check_dim(node, "B", b->shape, 1, gate_rows < 0 ? -1 : 2 * gate_rows,
                                    "2 * gates * hidden"));
  }
  if (const ValueInfo* lens = optional_input(inputs, 4)) {
    if (lens->dtype != DType::kI32 && lens->dtype != DType::kI64) {
      return invalid_argument(node.describe(), ": input sequence_lens must be int32, found ",
                              dtype_name(lens->dtype));
    }
    VOXRT_RETURN_IF_ERROR(check_rank(node, "sequence_lens", *lens, 1));
    VOXRT_RETURN_IF_ERROR(check_dim(node, "sequence_lens", lens->shape, 0, batch_size, "batch"));
    if (lens->data && seq.is_known()) {
      for (std::int64_t i = 0; i < lens->data->element_count(); ++i) {
        const std::int64_t len = lens->data->element_as_i64(i);
        if (len < 0 || len > seq.value) {
          return invalid_argument(node.describe(), ": sequence_lens[", i, "] = ", len,
                                  " is outside [0, ", seq.value, "] (the sequence length of X)");
        }
      }
    }
  }
  // initial_h, initial_c: [num_directions, batch, hidden] (layout 0) or [batch, num_directions,
  // hidden] (layout 1).
  const std::size_t state_inputs[] = {5, 6};
  const char* state_names[] = {"initial_h", "initial_c"};
  for (int s = 0; s < (node.op == OpKind::kLSTM ? 2 : 1); ++s) {
    const ValueInfo* state = optional_input(inputs, state_inputs[s]);
    if (!state) continue;
    if (state->dtype != x.dtype) {
      return invalid_argument(node.describe(), ": input ", state_names[s], " must have dtype ",
                              dtype_name(x.dtype), ", found ", dtype_name(state->dtype));
    }
    VOXRT_RETURN_IF_ERROR(check_rank(node, state_names[s], *state, 3));
    VOXRT_RETURN_IF_ERROR(check_dim(node, state_names[s], state->shape, layout == 0 ? 0 : 1,
                                    num_directions, "num_directions"));
    VOXRT_RETURN_IF_ERROR(
        check_dim(node, state_names[s], state->shape, layout == 0 ? 1 : 0, batch_size, "batch"));
    VOXRT_RETURN_IF_ERROR(check_dim(node, state_names[s], state->shape, 2, hidden, "hidden_size"));
  }
  if (node.op == OpKind::kLSTM) {
    if (const ValueInfo* p = optional_input(inputs, 7)) {
      VOXRT_RETURN_IF_ERROR(check_rank(node, "P", *p, 2));
      VOXRT_RETURN_IF_ERROR(check_dim(node, "P", p->shape, 0, num_directions, "num_directions"));
      VOXRT_RETURN_IF_ERROR(
          check_dim(node, "P", p->shape, 1, hidden < 0 ? -1 : 3 * hidden, "3 * hidden_size"));
    }
  }

  const Dim dirs = Dim::known(num_directions);
  const Dim hid = hidden >= 0 ? Dim::known(hidden) : Dim{};
  const bool rank_known = true;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].dtype = x.dtype;
    outputs[i].rank_known = rank_known;
    if (i == 0) {
      outputs[i].shape =
          layout == 0 ? SymShape{seq, dirs, batch, hid} : SymShape{batch, seq, dirs, hid};
    } else {
      outputs[i].shape = layout == 0 ? SymShape{dirs, batch, hid} : SymShape{batch, dirs, hid};
    }
  }
  return Status::ok();
}

}  // namespace voxrt::ir
