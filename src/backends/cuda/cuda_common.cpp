#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

Status cuda_status(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::ok();
  return internal_error("CUDA error ", cudaGetErrorName(error), " (", cudaGetErrorString(error),
                        ") in ", what);
}

Status cublas_status(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internal_error("cuBLAS error ", static_cast<int>(status), " in ", what);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}

Expected<std::shared_ptr<DeviceBuffer>> DeviceBuffer::allocate(std::size_t bytes) {
  auto buffer = std::make_shared<DeviceBuffer>();
  if (bytes == 0) return buffer;
  const cudaError_t error = cudaMalloc(&buffer->data_, bytes);
  if (error != cudaSuccess) {
    buffer->data_ = nullptr;
    return resource_exhausted("cudaMalloc of ", bytes,
                              " bytes failed: ", cudaGetErrorString(error));
  }
  buffer->bytes_ = bytes;
  return buffer;
}

ops::LowType low_type_for(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
    case Precision::kInt8: return ops::LowType::kF16;
    case Precision::kBf16: return ops::LowType::kBF16;
    default: return ops::LowType::kF32;
  }
}

ops::LowType KernelBuildContext::operand_type() const {
  return low_type_for(precision_);
}

Expected<void*> KernelBuildContext::upload_f32(std::span<const float> values, ops::LowType type) {
  if (type == ops::LowType::kF32) return upload_bytes(values.data(), values.size_bytes());
  // Convert on the device: upload float once into a temporary, convert, drop the temporary.
  VOXRT_ASSIGN_OR_RETURN(auto staging,
                         DeviceBuffer::allocate(std::max<std::size_t>(values.size_bytes(), 4)));
  VOXRT_CUDA_TRY(
      cudaMemcpy(staging->data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
  VOXRT_ASSIGN_OR_RETURN(auto out, DeviceBuffer::allocate(std::max<std::size_t>(
                                       values.size() * low_type_bytes(type), 4)));
  VOXRT_CUDA_TRY(ops::convert_from_f32(static_cast<const float*>(staging->data()), out->data(),
                                       type, static_cast<std::int64_t>(values.size()), nullptr));
  VOXRT_CUDA_TRY(cudaDeviceSynchronize());
  buffers_.push_back(out);
  return out->data();
}

Expected<void*> KernelBuildContext::upload_bytes(const void* data, std::size_t bytes) {
  VOXRT_ASSIGN_OR_RETURN(auto out, DeviceBuffer::allocate(std::max<std::size_t>(bytes, 4)));
  if (bytes) VOXRT_CUDA_TRY(cudaMemcpy(out->data(), data, bytes, cudaMemcpyHostToDevice));
  buffers_.push_back(out);
  return out->data();
}

}  // namespace voxrt::backends::cuda
