// TensorProto files (the input_0.pb / output_0.pb of ONNX's backend tests) <-> Tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "model_builder.h"
#include "onnx_import/tensor_conversion.h"

namespace voxrt::onnx_import {
namespace {

using namespace testing;

Tensor random_tensor(DType dtype, const Dims& dims, std::mt19937& rng) {
  Tensor t = Tensor::uninitialized(dtype, dims);
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  for (std::size_t i = 0; i < t.size_bytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  if (dtype == DType::kBool) {
    for (std::size_t i = 0; i < t.size_bytes(); ++i) bytes[i] &= 1;
  }
  return t;
}

TEST(TensorProto, RoundTripEveryDtypeThroughFiles) {
  std::mt19937 rng(42);
  const auto dir = std::filesystem::path(binary_dir()) / "test_output" / "onnx_import_tensors";
  std::filesystem::create_directories(dir);
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8,
                          DType::kU8,  DType::kI32, DType::kI64,  DType::kBool};
  const Dims shapes[] = {{}, {0}, {7}, {3, 5, 1}, {2, 0, 3}};
  for (DType dtype : dtypes) {
    for (const Dims& dims : shapes) {
      Tensor original = random_tensor(dtype, dims, rng);
      const std::string path = (dir / "t.pb").string();
      ASSERT_TRUE(write_tensor_proto_file(path, original, "tensor_name"));
      std::string name;
      auto loaded = read_tensor_proto_file(path, &name);
      ASSERT_TRUE(loaded) << loaded.status().to_string();
      EXPECT_EQ(name, "tensor_name");
      EXPECT_EQ(loaded->dtype(), dtype);
      EXPECT_EQ(loaded->dims(), dims);
      ASSERT_EQ(loaded->size_bytes(), original.size_bytes());
      if (original.size_bytes()) {
        EXPECT_EQ(std::memcmp(loaded->raw_data(), original.raw_data(), original.size_bytes()), 0)
            << dtype_name(dtype) << " " << dims_to_string(dims);
      }
    }
  }
}

TEST(TensorProto, ReadsBackendTestData) {
  std::string name;
  auto input = read_tensor_proto_file(
      testdata_node_dir() + "/test_reduce_sum_keepdims_example/test_data_set_0/input_1.pb", &name);
  ASSERT_TRUE(input) << input.status().to_string();
  EXPECT_EQ(name, "axes");
  EXPECT_EQ(input->dtype(), DType::kI64);
  EXPECT_EQ(input->to_i64_vector(), (std::vector<std::int64_t>{1}));
  auto output =
      read_tensor_proto_file(testdata_node_dir() + "/test_if/test_data_set_0/output_0.pb");
  ASSERT_TRUE(output);
  EXPECT_EQ(output->dims(), (Dims{5}));
  EXPECT_FLOAT_EQ(output->data<float>()[4], 5.0f);
}

TEST(TensorProto, TypedFieldsDecode) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT16);
  proto.add_dims(2);
  proto.add_int32_data(float_to_half_bits(1.5f));
  proto.add_int32_data(float_to_half_bits(-3.0f));
  auto half = parse_tensor_proto_bytes(proto.SerializeAsString());
  ASSERT_TRUE(half) << half.status().to_string();
  EXPECT_FLOAT_EQ(static_cast<float>(half->element_as_double(0)), 1.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(half->element_as_double(1)), -3.0f);

  proto.set_data_type(onnx::TensorProto::BOOL);
  proto.clear_int32_data();
  proto.add_int32_data(0);
  proto.add_int32_data(5);  // nonzero is true
  auto flags = parse_tensor_proto_bytes(proto.SerializeAsString());
  ASSERT_TRUE(flags);
  EXPECT_FALSE(flags->data<bool>()[0]);
  EXPECT_TRUE(flags->data<bool>()[1]);

  proto.set_data_type(onnx::TensorProto::INT8);
  proto.clear_int32_data();
  proto.add_int32_data(-128);
  proto.add_int32_data(127);
  auto bytes = parse_tensor_proto_bytes(proto.SerializeAsString());
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->data<std::int8_t>()[0], -128);
  EXPECT_EQ(bytes->data<std::int8_t>()[1], 127);

  // raw bools other than 0/1 are normalized.
  proto.clear_int32_data();
  proto.set_data_type(onnx::TensorProto::BOOL);
  proto.set_raw_data(std::string("\x00\x07", 2));
  auto raw_flags = parse_tensor_proto_bytes(proto.SerializeAsString());
  ASSERT_TRUE(raw_flags);
  EXPECT_EQ(raw_flags->element_as_i64(1), 1);
}

TEST(TensorProto, F64IsUnsupportedAndGarbageIsCorrupt) {
  onnx::TensorProto proto;
  proto.set_name("doubles");
  proto.set_data_type(onnx::TensorProto::DOUBLE);
  proto.add_dims(1);
  proto.add_double_data(2.0);
  auto doubles = parse_tensor_proto_bytes(proto.SerializeAsString());
  ASSERT_FALSE(doubles);
  EXPECT_EQ(doubles.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(doubles.status().message().find("tensor 'doubles': element type DOUBLE"),
            std::string::npos)
      << doubles.status().message();

  auto garbage = parse_tensor_proto_bytes(std::string("\x0a\xff\xff\xff\xff", 5));
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.status().code(), StatusCode::kCorrupt);

  // Forged dims that overflow are refused before any allocation.
  onnx::TensorProto huge;
  huge.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) huge.add_dims(std::int64_t{1} << 40);
  auto refused = parse_tensor_proto_bytes(huge.SerializeAsString());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);

  auto missing = read_tensor_proto_file("/nonexistent/input_0.pb");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace voxrt::onnx_import
