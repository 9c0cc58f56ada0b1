// GRU, LSTM, RNN keep every ONNX attribute; opset 7 is the first form without the removed
// "output_sequence" attribute.
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

void add_recurrent_importers(std::vector<OpImporter>& table) {
  table.push_back({"GRU", ir::OpKind::kGRU, 7, import_as_is});
  table.push_back({"LSTM", ir::OpKind::kLSTM, 7, import_as_is});
  table.push_back({"RNN", ir::OpKind::kRNN, 7, import_as_is});
}

}  // namespace voxrt::onnx_import
