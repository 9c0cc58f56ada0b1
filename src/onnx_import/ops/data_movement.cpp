// Shape and layout ops. Attributes that later opsets turned into inputs become constant inputs.
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

namespace {

using ir::OpKind;

// Reshape before opset 5 took the target shape as an attribute.
Status import_reshape(NodeImport& node) {
  if (node.opset < 5) {
    drop_attributes(node, {"consumed_inputs"});
    VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "shape", 1));
  }
  return import_as_is(node);
}

// Squeeze/Unsqueeze: axes moved from attribute to input 1 at opset 13.
Status import_axes_attribute_before_13(NodeImport& node) {
  if (node.opset < 13) VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "axes", 1));
  return import_as_is(node);
}

// Split: sizes as input 1 (attribute before opset 13); opset 18's num_outputs becomes sizes
// when the split dim is known, since its last chunk may be smaller than the others.
Status import_split(NodeImport& node) {
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    if (!node.outputs[i]) {
      return invalid_argument(node.describe(), ": output ", i, " has no name");
    }
  }
  if (node.opset < 13) VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "split", 1));
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t* num_outputs,
                         typed_attribute<std::int64_t>(node, "num_outputs"));
  if (num_outputs) {
    const ir::Value* data = node.inputs.empty() ? nullptr : node.inputs[0];
    const std::int64_t axis = node.attrs.get_int("axis", 0);
    const auto rank = static_cast<std::int64_t>(data ? data->shape.size() : 0);
    if (*num_outputs != static_cast<std::int64_t>(node.outputs.size()) || *num_outputs <= 0) {
      return invalid_argument(node.describe(), ": num_outputs is ", *num_outputs,
                              " but the node has ", node.outputs.size(), " outputs");
    }
    if (!data || !data->rank_known || axis < -rank || axis >= rank ||
        !data->shape[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)].is_known()) {
      return unsupported("num_outputs needs the split dimension known at import");
    }
    const std::int64_t total =
        data->shape[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)].value;
    const std::int64_t chunk = (total + *num_outputs - 1) / *num_outputs;
    std::vector<std::int64_t> sizes;
    for (std::int64_t left = total; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
    if (static_cast<std::int64_t>(sizes.size()) != *num_outputs) {
      return invalid_argument(node.describe(), ": cannot split ", total, " into ", *num_outputs,
                              " chunks of ", chunk);
    }
    node.attrs.erase("num_outputs");
    node.set_input(
        1, node.add_constant(
               "split", Tensor::from_vector({static_cast<std::int64_t>(sizes.size())}, sizes)));
  }
  return import_as_is(node);
}

// Slice before opset 10: starts, ends, axes as attributes (no steps).
Status import_slice(NodeImport& node) {
  if (node.opset < 10) {
    if (!node.attrs.has("starts") || !node.attrs.has("ends")) {
      return invalid_argument(node.describe(), ": opset ", node.opset,
                              " Slice needs attributes 'starts' and 'ends'");
    }
    VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "starts", 1));
    VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "ends", 2));
    VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "axes", 3));
  }
  return import_as_is(node);
}

// Pad before opset 11: pads ("paddings" in opset 1) and value as attributes.
Status import_pad(NodeImport& node) {
  if (node.opset < 11) {
    if (node.attrs.has("paddings") && !node.attrs.has("pads")) {
      VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t>* paddings,
                             typed_attribute<std::vector<std::int64_t>>(node, "paddings"));
      node.attrs.set("pads", *paddings);
      node.attrs.erase("paddings");
    }
    if (!node.attrs.has("pads")) {
      return invalid_argument(node.describe(), ": opset ", node.opset,
                              " Pad needs attribute 'pads'");
    }
    VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "pads", 1));
    VOXRT_RETURN_IF_ERROR(float_attribute_to_input(node, "value", 2));
  }
  return import_as_is(node);
}

// "value" is a one-element tensor; absent means f32 zero.
Status import_constant_of_shape(NodeImport& node) {
  const Tensor* value = node.attrs.get_tensor("value");
  if (node.attrs.has("value") && !value) {
    return invalid_argument(node.describe(), ": attribute 'value' is not a tensor");
  }
  if (!value) {
    node.attrs.set("value", Tensor::zeros(DType::kF32, {1}));
  } else if (value->element_count() != 1) {
    return invalid_argument(node.describe(), ": attribute 'value' has ", value->element_count(),
                            " elements, expected 1");
  }
  return import_as_is(node);
}

}  // namespace

void add_data_movement_importers(std::vector<OpImporter>& table) {
  table.push_back({"Transpose", OpKind::kTranspose, 1, import_as_is});
  table.push_back({"Reshape", OpKind::kReshape, 1, import_reshape});
  table.push_back({"Flatten", OpKind::kFlatten, 1, import_as_is});
  table.push_back({"Squeeze", OpKind::kSqueeze, 1, import_axes_attribute_before_13});
  table.push_back({"Unsqueeze", OpKind::kUnsqueeze, 1, import_axes_attribute_before_13});
  table.push_back({"Concat", OpKind::kConcat, 4, import_as_is});
  table.push_back({"Split", OpKind::kSplit, 2, import_split});
  table.push_back({"Slice", OpKind::kSlice, 1, import_slice});
  table.push_back({"Gather", OpKind::kGather, 1, import_as_is});
  table.push_back({"Pad", OpKind::kPad, 1, import_pad});
  table.push_back({"Shape", OpKind::kShape, 1, import_as_is});
  table.push_back({"Size", OpKind::kSize, 1, import_as_is});
  table.push_back({"ConstantOfShape", OpKind::kConstantOfShape, 9, import_constant_of_shape});
  table.push_back({"Range", OpKind::kRange, 11, import_as_is});
  table.push_back({"Expand", OpKind::kExpand, 8, import_as_is});
  // Tile before opset 6 took (input, tiles, axis) with different meaning.
  table.push_back({"Tile", OpKind::kTile, 6, import_as_is});
  table.push_back({"ScatterND", OpKind::kScatterND, 11, import_as_is});
  table.push_back({"ScatterElements", OpKind::kScatterElements, 11, import_as_is});
  // Scatter (opsets 9-10, removed at 11) is ScatterElements without a reduction.
  table.push_back({"Scatter", OpKind::kScatterElements, 9, import_as_is});
  table.push_back({"GatherElements", OpKind::kGatherElements, 11, import_as_is});
  table.push_back({"Trilu", OpKind::kTrilu, 14, import_as_is});
}

}  // namespace voxrt::onnx_import
