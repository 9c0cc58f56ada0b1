// Pointwise ops: unary math, binary arithmetic and comparisons, Clip, Cast, Dropout.
#include "onnx_import/op_importer.h"
#include "onnx_import/tensor_conversion.h"

namespace voxrt::onnx_import {

namespace {

using ir::OpKind;

// Opsets before 6 carried "consumed_inputs", a memory hint with no effect on results.
Status import_unary(NodeImport& node) {
  drop_attributes(node, {"consumed_inputs"});
  return import_as_is(node);
}

// Opsets before 7 broadcast only with broadcast=1, and then B could be aligned to `axis` instead
// of numpy's trailing alignment; only the trailing form means the same as today's op.
Status import_binary(NodeImport& node) {
  if (node.opset < 7 && node.attrs.get_int("broadcast", 0) != 0 && node.attrs.has("axis")) {
    return unsupported("legacy broadcast with an explicit 'axis' (opset < 7) is not supported");
  }
  drop_attributes(node, {"broadcast", "axis", "consumed_inputs"});
  return import_as_is(node);
}

// Opset < 11 gave min and max as attributes; the IR takes them as inputs (x, min?, max?).
Status import_clip(NodeImport& node) {
  if (node.opset < 11) {
    drop_attributes(node, {"consumed_inputs"});
    VOXRT_RETURN_IF_ERROR(float_attribute_to_input(node, "min", 1));
    VOXRT_RETURN_IF_ERROR(float_attribute_to_input(node, "max", 2));
  }
  return import_as_is(node);
}

// "to" becomes a voxrt DType; opset 1 spelled it as a string ("FLOAT").
Status import_cast(NodeImport& node) {
  int onnx_type = 0;
  if (auto code = typed_attribute<std::int64_t>(node, "to"); code && *code) {
    onnx_type = static_cast<int>(**code);
  } else if (auto text = typed_attribute<std::string>(node, "to"); text && *text) {
    onnx::TensorProto_DataType parsed;
    if (!onnx::TensorProto_DataType_Parse(**text, &parsed)) {
      return invalid_argument(node.describe(), ": attribute 'to' is '", **text,
                              "', expected an ONNX element type name");
    }
    onnx_type = parsed;
  } else {
    return invalid_argument(node.describe(), ": attribute 'to' is missing or not an integer");
  }
  VOXRT_ASSIGN_OR_RETURN(DType to, dtype_from_onnx(onnx_type, "attribute 'to'"));
  node.attrs.set("to", static_cast<std::int64_t>(to));
  return import_as_is(node);
}

// Inference only: opset < 12 had the ratio as an attribute (and opset < 7 "is_test").
Status import_dropout(NodeImport& node) {
  if (node.opset < 12) {
    drop_attributes(node, {"is_test", "consumed_inputs"});
    VOXRT_RETURN_IF_ERROR(float_attribute_to_input(node, "ratio", 1));
  }
  return import_as_is(node);
}

}  // namespace

void add_elementwise_importers(std::vector<OpImporter>& table) {
  const std::pair<std::string_view, OpKind> unary_ops[] = {
      {"Identity", OpKind::kIdentity},
      {"Relu", OpKind::kRelu},
      {"LeakyRelu", OpKind::kLeakyRelu},
      {"Sigmoid", OpKind::kSigmoid},
      {"Tanh", OpKind::kTanh},
      {"Exp", OpKind::kExp},
      {"Log", OpKind::kLog},
      {"Sqrt", OpKind::kSqrt},
      {"Neg", OpKind::kNeg},
      {"Abs", OpKind::kAbs},
      {"Reciprocal", OpKind::kReciprocal},
      {"Erf", OpKind::kErf},
      {"Floor", OpKind::kFloor},
      {"Ceil", OpKind::kCeil},
      {"Round", OpKind::kRound},
      {"Sign", OpKind::kSign},
      {"Softplus", OpKind::kSoftplus},
      {"Elu", OpKind::kElu},
      {"HardSigmoid", OpKind::kHardSigmoid},
      {"Sin", OpKind::kSin},
      {"Cos", OpKind::kCos},
      {"Not", OpKind::kNot},
  };
  for (const auto& [name, op] : unary_ops) table.push_back({name, op, 1, import_unary});

  const std::pair<std::string_view, OpKind> binary_ops[] = {
      {"Add", OpKind::kAdd},         {"Sub", OpKind::kSub},   {"Mul", OpKind::kMul},
      {"Div", OpKind::kDiv},         {"Pow", OpKind::kPow},   {"Equal", OpKind::kEqual},
      {"Greater", OpKind::kGreater}, {"Less", OpKind::kLess}, {"And", OpKind::kAnd},
      {"Or", OpKind::kOr},           {"Xor", OpKind::kXor},
  };
  for (const auto& [name, op] : binary_ops) table.push_back({name, op, 1, import_binary});
  // Variadic, broadcasting from opset 8 (equal shapes before, which broadcasting also accepts).
  table.push_back({"Max", OpKind::kMax, 1, import_unary});
  table.push_back({"Min", OpKind::kMin, 1, import_unary});
  table.push_back({"Mod", OpKind::kMod, 10, import_as_is});
  table.push_back({"GreaterOrEqual", OpKind::kGreaterOrEqual, 12, import_as_is});
  table.push_back({"LessOrEqual", OpKind::kLessOrEqual, 12, import_as_is});
  table.push_back({"Where", OpKind::kWhere, 9, import_as_is});
  table.push_back({"Clip", OpKind::kClip, 1, import_clip});
  table.push_back({"Cast", OpKind::kCast, 1, import_cast});
  table.push_back({"Dropout", OpKind::kDropout, 1, import_dropout});
}

}  // namespace voxrt::onnx_import
