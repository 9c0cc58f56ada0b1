#include "onnx_import/tensor_conversion.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace voxrt::onnx_import {

namespace {

// Bytes a tensor may claim before we refuse it, so a forged dims field cannot overflow sizes.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 40;

std::string describe_tensor(const Dims& dims, DType dtype) {
  return str_cat(dims_to_string(dims), " ", dtype_name(dtype));
}

// Element count of `dims`, or an error when a dim is negative or the product is absurd.
Expected<std::int64_t> checked_element_count(const Dims& dims, DType dtype,
                                             std::string_view where) {
  std::int64_t count = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return invalid_argument(where, ": dims[", i, "] is ", dims[i], ", expected a size >= 0");
    }
    if (__builtin_mul_overflow(count, dims[i], &count) ||
        static_cast<std::uint64_t>(count) > kMaxTensorBytes / dtype_size_bytes(dtype)) {
      return invalid_argument(where, ": dims ", dims_to_string(dims), " describe more than ",
                              kMaxTensorBytes, " bytes");
    }
  }
  return count;
}

// raw_data and external files are little-endian; swap on a big-endian host.
void little_endian_to_native(Tensor& tensor) {
  if constexpr (std::endian::native == std::endian::big) {
    const std::size_t width = dtype_size_bytes(tensor.dtype());
    auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
    for (std::size_t i = 0; i + width <= tensor.size_bytes(); i += width) {
      std::reverse(bytes + i, bytes + i + width);
    }
  } else {
    (void)tensor;
  }
}

// C++ bool must hold 0 or 1; ONNX only promises "nonzero is true".
void normalize_bools(Tensor& tensor) {
  if (tensor.dtype() != DType::kBool) return;
  auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
  for (std::size_t i = 0; i < tensor.size_bytes(); ++i) bytes[i] = bytes[i] != 0 ? 1 : 0;
}

Tensor tensor_from_bytes(DType dtype, const Dims& dims, const char* bytes) {
  Tensor tensor = Tensor::uninitialized(dtype, dims);
  if (tensor.size_bytes()) std::memcpy(tensor.raw_data(), bytes, tensor.size_bytes());
  normalize_bools(tensor);
  little_endian_to_native(tensor);
  return tensor;
}

template <typename Stored, typename Field>
Expected<Tensor> tensor_from_field(DType dtype, const Dims& dims, std::int64_t count,
                                   const Field& field, std::string_view field_name,
                                   std::string_view where) {
  if (static_cast<std::int64_t>(field.size()) != count) {
    return invalid_argument(where, ": ", field_name, " holds ", field.size(), " values, expected ",
                            count, " for ", describe_tensor(dims, dtype));
  }
  Tensor tensor = Tensor::uninitialized(dtype, dims);
  Stored* out = tensor.data<Stored>();
  for (int i = 0; i < field.size(); ++i) {
    if constexpr (std::is_same_v<Stored, bool>) {
      out[i] = field.Get(i) != 0;
    } else {
      out[i] = static_cast<Stored>(field.Get(i));
    }
  }
  return tensor;
}

// Resolves an external-data location inside `base_dir`; refuses anything that leaves it.
Expected<std::filesystem::path> resolve_external_path(const std::string& location,
                                                      const std::string& base_dir,
                                                      std::string_view where) {
  namespace fs = std::filesystem;
  const fs::path relative(location);
  if (location.empty() || relative.is_absolute() || relative.has_root_name() ||
      location.find('\0') != std::string::npos) {
    return invalid_argument(where, ": external data location '", location,
                            "' must be a path relative to the model folder");
  }
  const fs::path normal = relative.lexically_normal();
  if (!normal.empty() && *normal.begin() == "..") {
    return invalid_argument(where, ": external data location '", location,
                            "' leaves the model folder '", base_dir, "'");
  }
  std::error_code error;
  const fs::path base = fs::weakly_canonical(fs::path(base_dir), error);
  if (error)
    return io_error(where, ": cannot resolve model folder '", base_dir, "': ", error.message());
  const fs::path full = fs::weakly_canonical(base / normal, error);
  if (error) return io_error(where, ": cannot resolve '", location, "': ", error.message());
  // A symlink inside the folder may still point outside it.
  const auto mismatch = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (mismatch.first != base.end()) {
    return invalid_argument(where, ": external data location '", location, "' resolves to '",
                            full.string(), "', outside the model folder '", base.string(), "'");
  }
  return full;
}

Expected<std::uint64_t> parse_unsigned(const std::string& text, std::string_view key,
                                       std::string_view where) {
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return invalid_argument(where, ": external data '", key, "' is '", text,
                            "', expected a non-negative integer");
  }
  return std::stoull(text);
}

Expected<Tensor> tensor_from_external(const onnx::TensorProto& proto, DType dtype, const Dims& dims,
                                      std::string_view where,
                                      const std::string& external_data_dir) {
  std::string location;
  std::uint64_t offset_bytes = 0;
  std::optional<std::uint64_t> length_bytes;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      VOXRT_ASSIGN_OR_RETURN(offset_bytes, parse_unsigned(entry.value(), "offset", where));
    } else if (entry.key() == "length") {
      VOXRT_ASSIGN_OR_RETURN(length_bytes, parse_unsigned(entry.value(), "length", where));
    }
  }
  if (external_data_dir.empty()) {
    return invalid_argument(where, ": weights are in external file '", location,
                            "' but no model folder is known (import from a file or set "
                            "ImportOptions::external_data_dir)");
  }
  VOXRT_ASSIGN_OR_RETURN(std::filesystem::path path,
                         resolve_external_path(location, external_data_dir, where));
  const std::uint64_t expected_bytes =
      static_cast<std::uint64_t>(element_count(dims)) * dtype_size_bytes(dtype);
  if (length_bytes && *length_bytes != expected_bytes) {
    return invalid_argument(where, ": external data length is ", *length_bytes, " bytes, expected ",
                            expected_bytes, " for ", describe_tensor(dims, dtype));
  }
  std::error_code error;
  const std::uint64_t file_bytes = std::filesystem::file_size(path, error);
  if (error) {
    return not_found(where, ": external data file '", path.string(),
                     "' cannot be read: ", error.message());
  }
  if (offset_bytes > file_bytes || file_bytes - offset_bytes < expected_bytes) {
    return invalid_argument(where, ": external data file '", path.string(), "' has ", file_bytes,
                            " bytes; reading ", expected_bytes, " bytes at offset ", offset_bytes,
                            " runs past its end");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return io_error(where, ": cannot open external data file '", path.string(), "'");
  Tensor tensor = Tensor::uninitialized(dtype, dims);
  file.seekg(static_cast<std::streamoff>(offset_bytes));
  file.read(static_cast<char*>(tensor.raw_data()), static_cast<std::streamsize>(expected_bytes));
  if (!file) {
    return io_error(where, ": reading ", expected_bytes, " bytes at offset ", offset_bytes, " of '",
                    path.string(), "' failed");
  }
  normalize_bools(tensor);
  little_endian_to_native(tensor);
  return tensor;
}

}  // namespace

std::string onnx_type_name(int onnx_type) {
  if (onnx::TensorProto_DataType_IsValid(onnx_type)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type));
  }
  return str_cat("code ", onnx_type);
}

Expected<DType> dtype_from_onnx(int onnx_type, std::string_view where) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return DType::kF32;
    case onnx::TensorProto::FLOAT16: return DType::kF16;
    case onnx::TensorProto::BFLOAT16: return DType::kBF16;
    case onnx::TensorProto::INT8: return DType::kI8;
    case onnx::TensorProto::UINT8: return DType::kU8;
    case onnx::TensorProto::INT32: return DType::kI32;
    case onnx::TensorProto::INT64: return DType::kI64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    case onnx::TensorProto::UNDEFINED:
      return invalid_argument(where,
                              ": element type is UNDEFINED (0), expected one of f32, f16, "
                              "bf16, i8, u8, i32, i64, bool");
    default: break;
  }
  // 17..23 are the float8/int4 types of ONNX releases newer than ours.
  if (onnx::TensorProto_DataType_IsValid(onnx_type) || (onnx_type >= 17 && onnx_type <= 23)) {
    return unsupported(where, ": element type ", onnx_type_name(onnx_type),
                       " is not supported (voxrt supports f32, f16, bf16, i8, u8, i32, i64, bool)");
  }
  return invalid_argument(where, ": element type code ", onnx_type, " is not an ONNX element type");
}

int onnx_type_from_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32: return onnx::TensorProto::FLOAT;
    case DType::kF16: return onnx::TensorProto::FLOAT16;
    case DType::kBF16: return onnx::TensorProto::BFLOAT16;
    case DType::kI8: return onnx::TensorProto::INT8;
    case DType::kU8: return onnx::TensorProto::UINT8;
    case DType::kI32: return onnx::TensorProto::INT32;
    case DType::kI64: return onnx::TensorProto::INT64;
    case DType::kBool: return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto, std::string_view where,
                                   const std::string& external_data_dir) {
  VOXRT_ASSIGN_OR_RETURN(DType dtype, dtype_from_onnx(proto.data_type(), where));
  if (proto.has_segment()) {
    return unsupported(where, ": segmented tensors are not supported");
  }
  Dims dims(proto.dims().begin(), proto.dims().end());
  VOXRT_ASSIGN_OR_RETURN(std::int64_t count, checked_element_count(dims, dtype, where));
  const std::uint64_t expected_bytes = static_cast<std::uint64_t>(count) * dtype_size_bytes(dtype);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return tensor_from_external(proto, dtype, dims, where, external_data_dir);
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != expected_bytes) {
      return invalid_argument(where, ": raw_data has ", proto.raw_data().size(),
                              " bytes, expected ", expected_bytes, " for ",
                              describe_tensor(dims, dtype));
    }
    return tensor_from_bytes(dtype, dims, proto.raw_data().data());
  }
  switch (dtype) {
    case DType::kF32:
      return tensor_from_field<float>(dtype, dims, count, proto.float_data(), "float_data", where);
    case DType::kI64:
      return tensor_from_field<std::int64_t>(dtype, dims, count, proto.int64_data(), "int64_data",
                                             where);
    case DType::kI32:
      return tensor_from_field<std::int32_t>(dtype, dims, count, proto.int32_data(), "int32_data",
                                             where);
    // f16/bf16 keep their 16-bit patterns in int32_data; i8/u8/bool one value per int32.
    case DType::kF16:
    case DType::kBF16:
      return tensor_from_field<std::uint16_t>(dtype, dims, count, proto.int32_data(), "int32_data",
                                              where);
    case DType::kI8:
      return tensor_from_field<std::int8_t>(dtype, dims, count, proto.int32_data(), "int32_data",
                                            where);
    case DType::kU8:
      return tensor_from_field<std::uint8_t>(dtype, dims, count, proto.int32_data(), "int32_data",
                                             where);
    case DType::kBool:
      return tensor_from_field<bool>(dtype, dims, count, proto.int32_data(), "int32_data", where);
  }
  return internal_error(where, ": unhandled dtype");
}

void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(onnx_type_from_dtype(tensor.dtype()));
  for (std::int64_t d : tensor.dims()) proto->add_dims(d);
  std::string bytes;
  if (tensor.size_bytes())
    bytes.assign(static_cast<const char*>(tensor.raw_data()), tensor.size_bytes());
  if constexpr (std::endian::native == std::endian::big) {
    const std::size_t width = dtype_size_bytes(tensor.dtype());
    for (std::size_t i = 0; i + width <= bytes.size(); i += width) {
      std::reverse(bytes.begin() + i, bytes.begin() + i + width);
    }
  }
  proto->set_raw_data(std::move(bytes));
}

}  // namespace voxrt::onnx_import
