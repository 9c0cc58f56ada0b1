// Every model of ONNX's backend node tests imports or fails with a clean "unsupported" error;
// a few get their exact IR checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "model_builder.h"
#include "onnx_import/op_importer.h"
#include "support/quoted_names.h"

namespace voxrt::onnx_import {
namespace {

using testing::testdata_node_dir;

// "node 'name' (OpType, domain 'ai.onnx', ..." -> "ai.onnx.OpType"; empty when the message names
// no node. Plain scanning, not std::regex: GCC 12 reports false maybe-uninitialized warnings
// inside <regex> under -fsanitize, which -Werror turns into a failed sanitizer build.
std::string unsupported_node_op(const std::string& message) {
  const std::size_t node = message.find("node '");
  if (node == std::string::npos) return {};
  const std::size_t name_end = message.find("' (", node + 6);
  if (name_end == std::string::npos) return {};
  const std::size_t op_begin = name_end + 3;
  const std::size_t op_end = message.find(", domain '", op_begin);
  if (op_end == std::string::npos) return {};
  const std::size_t domain_begin = op_end + 10;
  const std::size_t domain_end = message.find('\'', domain_begin);
  if (domain_end == std::string::npos) return {};
  return message.substr(domain_begin, domain_end - domain_begin) + "." +
         message.substr(op_begin, op_end - op_begin);
}

std::unique_ptr<ir::Graph> import_node_test(const std::string& test) {
  auto graph = import_model_file(testdata_node_dir() + "/" + test + "/model.onnx");
  EXPECT_TRUE(graph.has_value()) << graph.status().to_string();
  return graph ? std::move(graph).value() : nullptr;
}

TEST(NodeModels, EveryModelImportsOrIsUnsupported) {
  std::vector<std::string> folders;
  for (const auto& entry : std::filesystem::directory_iterator(testdata_node_dir())) {
    if (std::filesystem::exists(entry.path() / "model.onnx"))
      folders.push_back(entry.path().string());
  }
  std::sort(folders.begin(), folders.end());
  ASSERT_GT(folders.size(), 500u);
  int imported = 0;
  int unsupported_count = 0;
  // Which ops (or other reasons) make models unsupported, most frequent first.
  std::map<std::string, int> unsupported_reasons;
  for (const std::string& folder : folders) {
    auto graph = import_model_file(folder + "/model.onnx");
    if (graph) {
      ++imported;
      EXPECT_TRUE(graph.value()->validate()) << folder;
      continue;
    }
    if (graph.status().code() == StatusCode::kUnsupported) {
      ++unsupported_count;
      // The message must name at least one node or value.
      const std::string message = graph.status().message();
      EXPECT_NE(message.find("'"), std::string::npos) << message;
      if (const std::string op = unsupported_node_op(message); !op.empty()) {
        ++unsupported_reasons[op];
      } else {
        // An unsupported input or initializer: its first listed line, without the names.
        const std::size_t line = message.find("\n  ");
        const std::string first = message.substr(line == std::string::npos ? 0 : line + 3);
        const std::string reason = test::without_quoted_names(first);
        ++unsupported_reasons[reason.substr(0, reason.find(" (voxrt supports"))];
      }
      if (std::getenv("VOXRT_IMPORT_VERBOSE")) std::printf("%s\n", message.c_str());
      continue;
    }
    ADD_FAILURE() << folder << ": " << graph.status().to_string();
  }
  std::printf("ONNX node test models: %zu, imported %d, unsupported %d\n", folders.size(), imported,
              unsupported_count);
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [reason, count] : unsupported_reasons) ranked.emplace_back(-count, reason);
  std::sort(ranked.begin(), ranked.end());
  std::string summary;
  for (const auto& [count, reason] : ranked) summary += str_cat(reason, " x", -count, ", ");
  std::printf("first unsupported node per model, by op: %s\n", summary.c_str());
  EXPECT_GT(imported, 300);
}

TEST(NodeModels, ClipDefaultMin) {
  auto graph = import_node_test("test_clip_default_min");
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->nodes().size(), 1u);
  const ir::Node& clip = *graph->nodes()[0];
  EXPECT_EQ(clip.op, ir::OpKind::kClip);
  EXPECT_EQ(clip.opset, 13);
  ASSERT_EQ(clip.inputs.size(), 2u);  // x, min; max omitted
  EXPECT_EQ(clip.inputs[0]->name, "x");
  EXPECT_EQ(clip.inputs[1]->name, "min");
  ASSERT_EQ(graph->inputs.size(), 2u);
  EXPECT_EQ(graph->inputs[0]->shape,
            (ir::SymShape{ir::Dim::known(3), ir::Dim::known(4), ir::Dim::known(5)}));
  EXPECT_TRUE(graph->inputs[1]->rank_known);
  EXPECT_TRUE(graph->inputs[1]->shape.empty());
  ASSERT_EQ(graph->outputs.size(), 1u);
  EXPECT_EQ(graph->outputs[0], clip.outputs[0]);
  EXPECT_EQ(graph->outputs[0]->name, "y");
}

TEST(NodeModels, Squeeze) {
  auto graph = import_node_test("test_squeeze");
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->nodes().size(), 1u);
  const ir::Node& squeeze = *graph->nodes()[0];
  EXPECT_EQ(squeeze.op, ir::OpKind::kSqueeze);
  ASSERT_EQ(squeeze.inputs.size(), 2u);
  EXPECT_EQ(squeeze.inputs[1]->dtype, DType::kI64);
  EXPECT_EQ(squeeze.inputs[1]->shape, (ir::SymShape{ir::Dim::known(1)}));
  EXPECT_TRUE(squeeze.attrs.all().empty());
}

TEST(NodeModels, ReduceSumKeepdims) {
  auto graph = import_node_test("test_reduce_sum_keepdims_example");
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->nodes().size(), 1u);
  const ir::Node& reduce = *graph->nodes()[0];
  EXPECT_EQ(reduce.op, ir::OpKind::kReduceSum);
  EXPECT_EQ(reduce.attrs.get_int("keepdims", -1), 1);
  ASSERT_EQ(reduce.inputs.size(), 2u);
  EXPECT_EQ(reduce.inputs[1]->name, "axes");
}

TEST(NodeModels, ReduceMeanAxesAttributeBecomesInput) {
  // Opset 13 ReduceMean still has axes as an attribute.
  auto graph = import_node_test("test_reduce_mean_keepdims_example");
  ASSERT_TRUE(graph);
  const ir::Node& reduce = *graph->nodes()[0];
  EXPECT_FALSE(reduce.attrs.has("axes"));
  ASSERT_EQ(reduce.inputs.size(), 2u);
  ASSERT_TRUE(reduce.inputs[1]->is_constant());
  EXPECT_EQ(reduce.inputs[1]->constant->to_i64_vector(), (std::vector<std::int64_t>{1}));
}

TEST(NodeModels, IfWithConstantBranches) {
  auto graph = import_node_test("test_if");
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->nodes().size(), 1u);
  const ir::Node& node = *graph->nodes()[0];
  EXPECT_EQ(node.op, ir::OpKind::kIf);
  ASSERT_EQ(node.inputs.size(), 1u);  // captures nothing
  auto then_branch = node.attrs.get_graph("then_branch");
  auto else_branch = node.attrs.get_graph("else_branch");
  ASSERT_TRUE(then_branch && else_branch);
  EXPECT_TRUE(then_branch->nodes().empty());  // Constant nodes became constant values
  ASSERT_EQ(then_branch->outputs.size(), 1u);
  ASSERT_TRUE(then_branch->outputs[0]->is_constant());
  EXPECT_EQ(then_branch->outputs[0]->constant->dims(), (Dims{5}));
  EXPECT_FLOAT_EQ(then_branch->outputs[0]->constant->data<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(else_branch->outputs[0]->constant->data<float>()[0], 5.0f);
}

TEST(NodeModels, EveryIrOpExceptFusedHasAnImporter) {
#define VOXRT_CHECK_IMPORTER(name, onnx_name, family, id)           \
  {                                                                 \
    const OpImporter* importer = find_op_importer(onnx_name);       \
    const bool fused = ir::is_voxrt_domain_op(ir::OpKind::k##name); \
    EXPECT_EQ(importer != nullptr, !fused) << onnx_name;            \
    if (importer) {                                                 \
      EXPECT_EQ(importer->op, ir::OpKind::k##name) << onnx_name;    \
    }                                                               \
  }
  VOXRT_FOR_EACH_OP(VOXRT_CHECK_IMPORTER)
#undef VOXRT_CHECK_IMPORTER
}

}  // namespace
}  // namespace voxrt::onnx_import
