// Errors say what was expected, what was found and where; unsupported nodes are listed all at once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "model_builder.h"

namespace voxrt::onnx_import {
namespace {

using namespace testing;

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(ImportErrors, EveryUnsupportedNodeIsListedInOneError) {
  auto model = make_model(13);
  auto* ml = model.add_opset_import();
  ml->set_domain("com.example");
  ml->set_version(3);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 4, 8});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {});
  add_node(g, "Relu", {"x"}, {"a"}, "relu");
  add_node(g, "Foo", {"a"}, {"b"});              // unnamed: becomes Foo_1
  add_node(g, "FusedConv", {"b"}, {"c"}, "fc");  // voxrt-internal, not ai.onnx
  add_node(g, "Bar", {"c"}, {"d"}, "bar", "com.example");
  add_node(g, "Celu", {"d"}, {"e"}, "celu");
  add_node(g, "Relu", {"e"}, {"y"}, "relu2");
  auto graph = import_proto(model);
  ASSERT_FALSE(graph);
  const Status status = graph.status();
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(status, "4 unsupported")) << status.message();
  EXPECT_TRUE(contains(status, "node 'Foo_1' (Foo, domain 'ai.onnx', opset 13)"))
      << status.message();
  EXPECT_TRUE(contains(status, "node 'fc' (FusedConv, domain 'ai.onnx', opset 13)"))
      << status.message();
  EXPECT_TRUE(contains(status, "node 'bar' (Bar, domain 'com.example', opset 3)"))
      << status.message();
  EXPECT_TRUE(contains(status, "node 'celu' (Celu, domain 'ai.onnx', opset 13)"))
      << status.message();
  EXPECT_FALSE(contains(status, "relu2"));
}

TEST(ImportErrors, BadProtobuf) {
  auto graph = import_model_bytes(std::string("\xff\xff\xff\xff garbage", 12));
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(contains(graph.status(), "ModelProto")) << graph.status().message();
}

TEST(ImportErrors, MissingModelFile) {
  auto graph = import_model_file("/nonexistent/model.onnx");
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(graph.status(), "/nonexistent/model.onnx"));
}

TEST(ImportErrors, BadDtypeAndWrongRawDataSize) {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_output() = tensor_info("w", onnx::TensorProto::FLOAT, {2, 3});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  w->set_raw_data(std::string(20, '\0'));
  auto graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      contains(graph.status(), "initializer 'w': raw_data has 20 bytes, expected 24 for 2x3 f32"))
      << graph.status().message();

  w->set_data_type(99);
  graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(graph.status(), "initializer 'w': element type code 99"))
      << graph.status().message();

  w->clear_raw_data();
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 5; ++i) w->add_float_data(1.0f);
  graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_TRUE(contains(graph.status(), "float_data holds 5 values, expected 6"))
      << graph.status().message();

  w->clear_float_data();
  w->set_data_type(onnx::TensorProto::DOUBLE);
  for (int i = 0; i < 6; ++i) w->add_double_data(1.0);
  graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(graph.status(), "initializer 'w': element type DOUBLE"))
      << graph.status().message();
}

TEST(ImportErrors, OpsetTooNewOrMissing) {
  auto model = make_model(19);
  auto graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(graph.status(), "opset 19")) << graph.status().message();
  model.clear_opset_import();
  add_node(model.mutable_graph(), "Relu", {"x"}, {"y"}, "relu");
  graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_TRUE(contains(graph.status(), "node 'relu' (Relu): the model imports no ai.onnx opset"))
      << graph.status().message();
}

TEST(ImportErrors, ValueProducedTwiceAndCycle) {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2});
  *g->add_output() = tensor_info("b", onnx::TensorProto::FLOAT, {2});
  add_node(g, "Relu", {"b"}, {"a"}, "r1");
  add_node(g, "Relu", {"a"}, {"b"}, "r2");
  auto graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_TRUE(contains(graph.status(), "cycle")) << graph.status().message();
  add_node(g, "Relu", {"x"}, {"a"}, "r3");
  graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_TRUE(contains(graph.status(), "node 'r3' (Relu): output 'a' is already defined"))
      << graph.status().message();
}

// External data: a model saved by Python's onnx with its weights in one side file.
class ExternalData : public ::testing::Test {
 protected:
  // Python's onnx takes seconds to start: make the model once, copy it for each test.
  static std::filesystem::path pristine_dir() {
    return std::filesystem::path(binary_dir()) / "test_output" / "onnx_import_external";
  }
  static void SetUpTestSuite() {
    const auto dir = pristine_dir();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string script = R"PY(
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
out = sys.argv[1]
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
b = numpy_helper.from_array(np.array([7, -8, 9, 10, 11], dtype=np.int64), "b")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g", [x], [y], [w, b])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.save_model(model, out + "/model.onnx", save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
)PY";
    std::ofstream(dir / "make_model.py") << script;
    const std::string command =
        "/usr/bin/python3 " + (dir / "make_model.py").string() + " " + dir.string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(pristine_dir() / "weights.bin"));
    dir_ = pristine_dir().string() + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (const char* file : {"model.onnx", "weights.bin"}) {
      std::filesystem::copy_file(pristine_dir() / file, dir_ / file);
    }
  }
  std::filesystem::path dir_;
};

TEST_F(ExternalData, WeightsLoadFromTheSideFile) {
  auto graph = import_model_file((dir_ / "model.onnx").string());
  ASSERT_TRUE(graph) << graph.status().to_string();
  const ir::Value* w = (*graph)->find_value("w");
  const ir::Value* b = (*graph)->find_value("b");
  ASSERT_TRUE(w && w->is_constant() && b && b->is_constant());
  EXPECT_EQ(w->constant->dims(), (Dims{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(w->constant->data<float>()[i], static_cast<float>(i));
  EXPECT_EQ(b->constant->to_i64_vector(), (std::vector<std::int64_t>{7, -8, 9, 10, 11}));

  // Bytes without a folder cannot reach the side file.
  std::ifstream file(dir_ / "model.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto from_bytes = import_model_bytes(bytes);
  ASSERT_FALSE(from_bytes);
  EXPECT_TRUE(contains(from_bytes.status(), "weights.bin")) << from_bytes.status().message();
  ImportOptions options;
  options.external_data_dir = dir_.string();
  EXPECT_TRUE(import_model_bytes(bytes, options));
}

TEST_F(ExternalData, TruncatedAndMissingFiles) {
  const auto weights = dir_ / "weights.bin";
  const auto size = std::filesystem::file_size(weights);
  std::filesystem::resize_file(weights, size - 8);
  auto graph = import_model_file((dir_ / "model.onnx").string());
  ASSERT_FALSE(graph);
  EXPECT_TRUE(contains(graph.status(), "initializer 'b'")) << graph.status().message();
  EXPECT_TRUE(contains(graph.status(), "weights.bin")) << graph.status().message();
  EXPECT_TRUE(contains(graph.status(), "at offset")) << graph.status().message();

  std::filesystem::remove(weights);
  graph = import_model_file((dir_ / "model.onnx").string());
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(graph.status(), "initializer 'w'")) << graph.status().message();
}

TEST_F(ExternalData, PathsThatLeaveTheFolderAreRefused) {
  for (const std::string location : {"../weights.bin", "/etc/passwd", "sub/../../x.bin"}) {
    auto model = make_model(13);
    auto* g = model.mutable_graph();
    *g->add_output() = tensor_info("w", onnx::TensorProto::FLOAT, {2});
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(2);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = w->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    ImportOptions options;
    options.external_data_dir = dir_.string();
    auto graph = import_proto(model, options);
    ASSERT_FALSE(graph) << location;
    EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument) << location;
    EXPECT_TRUE(contains(graph.status(), "initializer 'w'")) << graph.status().message();
  }
  // A symlink inside the folder that points outside it is refused too.
  std::filesystem::create_directories(dir_ / "outside");
  std::ofstream(dir_ / "outside" / "secret.bin") << "12345678";
  std::filesystem::create_directories(dir_ / "model");
  std::filesystem::create_symlink(dir_ / "outside" / "secret.bin", dir_ / "model" / "link.bin");
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_output() = tensor_info("w", onnx::TensorProto::FLOAT, {2});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value("link.bin");
  ImportOptions options;
  options.external_data_dir = (dir_ / "model").string();
  auto graph = import_proto(model, options);
  ASSERT_FALSE(graph);
  EXPECT_TRUE(contains(graph.status(), "outside the model folder")) << graph.status().message();
}

}  // namespace
}  // namespace voxrt::onnx_import
