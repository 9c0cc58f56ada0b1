// Shape inference of GRU / LSTM / RNN: symbolic seq and batch pass through, hidden_size comes
// from the attribute or from R, layout 1 moves batch first, and bad shapes are errors naming
// the node.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

ValueInfo info(SymShape shape, DType dtype = DType::kF32) {
  ValueInfo v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  return v;
}

ValueInfo absent() {
  ValueInfo v;
  v.present = false;
  return v;
}

Node make_node(OpKind op, std::size_t outputs, std::string direction = "forward") {
  Node node;
  node.op = op;
  node.name = "rnn0";
  node.opset = 14;
  node.outputs.assign(outputs, nullptr);
  node.attrs.set("direction", direction);
  return node;
}

TEST(RecurrentShape, SymbolicDimsAndHiddenFromR) {
  Node node = make_node(OpKind::kGRU, 2, "bidirectional");
  const Dim seq = Dim::symbolic("T"), batch = Dim::symbolic("N");
  std::vector<ValueInfo> in = {info({seq, batch, Dim::known(40)}),
                               info({Dim::known(2), Dim::known(48), Dim::known(40)}),
                               info({Dim::known(2), Dim::known(48), Dim::known(16)})};
  std::vector<InferredOutput> out;
  ASSERT_TRUE(infer_outputs(node, in, out).is_ok());
  EXPECT_EQ(out[0].shape, (SymShape{seq, Dim::known(2), batch, Dim::known(16)}));
  EXPECT_EQ(out[1].shape, (SymShape{Dim::known(2), batch, Dim::known(16)}));
}

TEST(RecurrentShape, LayoutOneIsBatchFirst) {
  Node node = make_node(OpKind::kLSTM, 3);
  node.attrs.set("layout", std::int64_t{1});
  node.attrs.set("hidden_size", std::int64_t{8});
  const Dim seq = Dim::symbolic("T");
  std::vector<ValueInfo> in = {info({Dim::known(3), seq, Dim::known(5)}),
                               info({Dim::known(1), Dim::known(32), Dim::known(5)}),
                               info({Dim::known(1), Dim::known(32), Dim::known(8)}),
                               absent(),
                               absent(),
                               info({Dim::known(3), Dim::known(1), Dim::known(8)})};
  std::vector<InferredOutput> out;
  ASSERT_TRUE(infer_outputs(node, in, out).is_ok());
  EXPECT_EQ(out[0].shape, (SymShape{Dim::known(3), seq, Dim::known(1), Dim::known(8)}));
  EXPECT_EQ(out[1].shape, (SymShape{Dim::known(3), Dim::known(1), Dim::known(8)}));
  EXPECT_EQ(out[2].shape, out[1].shape);
  // Before opset 14 there is no layout attribute: layout stays 0.
  node.opset = 13;
  // initial_h [3, 1, 8] then reads as 3 directions.
  EXPECT_FALSE(infer_outputs(node, in, out).is_ok());
}

TEST(RecurrentShape, MismatchesAreErrorsNamingTheNode) {
  Node node = make_node(OpKind::kRNN, 2);
  node.attrs.set("hidden_size", std::int64_t{4});
  std::vector<ValueInfo> in = {info({Dim::known(5), Dim::known(2), Dim::known(3)}),
                               info({Dim::known(1), Dim::known(4), Dim::known(3)}),
                               info({Dim::known(1), Dim::known(4), Dim::known(5)})};
  std::vector<InferredOutput> out;
  Status status = infer_outputs(node, in, out);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("rnn0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("R"), std::string::npos);
  // W with the wrong direction count.
  Node bi = make_node(OpKind::kRNN, 2, "bidirectional");
  in[2] = info({Dim::known(1), Dim::known(4), Dim::known(4)});
  EXPECT_FALSE(infer_outputs(bi, in, out).is_ok());
  // Too few inputs, bad direction, rank mismatch: errors, never crashes.
  EXPECT_FALSE(infer_outputs(node, std::vector<ValueInfo>{in[0]}, out).is_ok());
  Node bad = make_node(OpKind::kGRU, 1, "sideways");
  EXPECT_FALSE(infer_outputs(bad, in, out).is_ok());
  in[0] = info({Dim::known(5), Dim::known(3)});
  EXPECT_FALSE(infer_outputs(node, in, out).is_ok());
}

TEST(RecurrentShape, SequenceLensBeyondSeqIsAnError) {
  Node node = make_node(OpKind::kGRU, 2);
  Tensor lens = Tensor::from_vector<std::int32_t>({2}, {3, 9});
  ValueInfo lens_info = info({Dim::known(2)}, DType::kI32);
  lens_info.data = &lens;
  std::vector<ValueInfo> in = {info({Dim::known(4), Dim::known(2), Dim::known(3)}),
                               info({Dim::known(1), Dim::known(6), Dim::known(3)}),
                               info({Dim::known(1), Dim::known(6), Dim::known(2)}), absent(),
                               lens_info};
  std::vector<InferredOutput> out;
  Status status = infer_outputs(node, in, out);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("sequence_lens[1] = 9"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace voxrt::ir
