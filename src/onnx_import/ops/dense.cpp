// Conv, Gemm, MatMul, Einsum. The fused forms (FusedConv, FusedMatMul) are voxrt-internal and are
// not importable from the ai.onnx domain: they have no entry here.
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

namespace {

// Gemm before opset 7 broadcast C only with broadcast=1; without it C already had the full
// shape, which broadcasting accepts too.
Status import_gemm(NodeImport& node) {
  drop_attributes(node, {"broadcast"});
  return import_as_is(node);
}

}  // namespace

void add_dense_importers(std::vector<OpImporter>& table) {
  table.push_back({"Conv", ir::OpKind::kConv, 1, import_as_is});
  table.push_back({"Gemm", ir::OpKind::kGemm, 1, import_gemm});
  table.push_back({"MatMul", ir::OpKind::kMatMul, 1, import_as_is});
  table.push_back({"Einsum", ir::OpKind::kEinsum, 12, import_as_is});
}

}  // namespace voxrt::onnx_import
