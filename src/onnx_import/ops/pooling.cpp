// Pooling ops keep their ONNX attributes unchanged.
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

void add_pooling_importers(std::vector<OpImporter>& table) {
  // MaxPool/AveragePool before opset 7 lack only attributes added later (defaults agree).
  table.push_back({"MaxPool", ir::OpKind::kMaxPool, 1, import_as_is});
  table.push_back({"AveragePool", ir::OpKind::kAveragePool, 1, import_as_is});
  table.push_back({"GlobalAveragePool", ir::OpKind::kGlobalAveragePool, 1, import_as_is});
  table.push_back({"GlobalMaxPool", ir::OpKind::kGlobalMaxPool, 1, import_as_is});
}

}  // namespace voxrt::onnx_import
