// FusedPointwise on the CUDA backend: the node's register program becomes CUDA C++
// (pointwise_codegen.h), compiled by NVRTC to SASS for the device's SM when the engine is built
// (attach_fused_pointwise_code, called by the autotuner) and stored in the node's attributes,
// so the engine file carries it and loading needs no compiler. A node without stored code (a
// graph compiled directly, as the op tests do) is compiled when it is loaded.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/nvrtc_compile.h"
#include "backends/cuda/pointwise_codegen.h"

namespace voxrt::backends::cuda {
namespace {

constexpr char kCubinAttr[] = "voxrt.cuda_cubin";
constexpr char kCubinSmAttr[] = "voxrt.cuda_cubin_sm";
constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 4096;  // grid-stride beyond this

bool all_f32(const ir::Node& node) {
  for (const ir::Value* v : node.inputs) {
    if (!v || v->dtype != DType::kF32) return false;
  }
  return node.outputs.size() == 1 && node.outputs[0] && node.outputs[0]->dtype == DType::kF32;
}

Expected<int> current_sm() {
  int device = 0, major = 0, minor = 0;
  VOXRT_CUDA_TRY(cudaGetDevice(&device));
  VOXRT_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  VOXRT_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

Expected<std::string> compile_node(const ir::Node& node, int sm) {
  VOXRT_ASSIGN_OR_RETURN(const ir::PointwiseProgram program, ir::decode_pointwise_program(node));
  const std::string source = pointwise_kernel_source(program, node.describe());
  auto cubin = nvrtc_compile_cubin(source, str_cat(node.name, ".cu"), sm);
  if (!cubin) return cubin.status().with_context(node.describe());
  return cubin;
}

// The loaded module; unloaded with the last kernel that uses it. The image stays with it: with
// lazy loading the driver may read it again when a kernel is first launched.
struct Module {
  std::string image;
  cudaLibrary_t library = nullptr;
  cudaKernel_t flat = nullptr;
  cudaKernel_t strided = nullptr;
  ~Module() {
    if (library) cudaLibraryUnload(library);
  }
};

class FusedPointwiseCall final : public CudaCall {
 public:
  FusedPointwiseCall(std::shared_ptr<const Module> module, PointwiseParams params, bool flat)
      : module_(std::move(module)), params_(params), flat_(flat) {}

  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    if (params_.count == 0) return Status::ok();
    PointwiseParams p = params_;
    for (std::size_t k = 0; k < in.size(); ++k) p.in[k] = in[k].as<const float>();
    p.out = out[0].as<float>();
    void* args[] = {&p};
    const auto blocks = std::min<std::int64_t>((p.count + kThreads - 1) / kThreads, kMaxBlocks);
    // A cudaKernel_t is accepted where a kernel symbol is expected (cuda_runtime_api.h).
    const void* kernel = reinterpret_cast<const void*>(flat_ ? module_->flat : module_->strided);
    VOXRT_CUDA_TRY(cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                                    args, 0, context.stream));
    return Status::ok();
  }

 private:
  std::shared_ptr<const Module> module_;
  PointwiseParams params_;  // shapes and strides; pointers are set per enqueue
  bool flat_;
};

class FusedPointwiseKernel final : public CudaKernel {
 public:
  explicit FusedPointwiseKernel(std::shared_ptr<const Module> module)
      : module_(std::move(module)) {}

  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    const Dims& od = out[0].dims;
    if (od.size() > static_cast<std::size_t>(kPointwiseMaxRank))
      return unsupported("FusedPointwise of rank ", od.size(), " (at most ", kPointwiseMaxRank,
                         " on the CUDA backend)");
    PointwiseParams p;
    p.count = element_count(od);
    p.rank = static_cast<std::int64_t>(od.size());
    for (std::size_t d = 0; d < od.size(); ++d) p.dims[d] = od[d];
    // The flat kernel takes inputs of the output's shape and single elements; anything else
    // broadcasts through strides.
    bool flat = true;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (in[k].dims.size() > od.size())
        return invalid_argument("FusedPointwise input ", k, " has rank ", in[k].dims.size(),
                                ", more than the output's ", od.size());
      broadcast_strides(in[k].dims, od, p.strides[k]);
      if (in[k].count() == 1 && p.count != 1) {
        p.scalar_mask |= std::int64_t{1} << k;
      } else if (in[k].count() != p.count) {
        flat = false;
      }
    }
    return std::unique_ptr<CudaCall>(new FusedPointwiseCall(module_, p, flat));
  }

 private:
  std::shared_ptr<const Module> module_;
};

}  // namespace

std::string fused_pointwise_unsupported(const ir::Node& node) {
  if (!all_f32(node)) return "the CUDA backend runs FusedPointwise on f32 tensors only";
  if (node.inputs.empty()) return "FusedPointwise without inputs";
  if (node.inputs.size() > static_cast<std::size_t>(kPointwiseMaxInputs))
    return str_cat("FusedPointwise with ", node.inputs.size(), " inputs (at most ",
                   kPointwiseMaxInputs, " on the CUDA backend)");
  return {};
}

Status attach_fused_pointwise_code(ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(const int sm, current_sm());
  if (node.attrs.get_int(kCubinSmAttr, -1) == sm && node.attrs.has(kCubinAttr)) return Status::ok();
  VOXRT_ASSIGN_OR_RETURN(std::string cubin, compile_node(node, sm));
  node.attrs.set(kCubinAttr, std::move(cubin));
  node.attrs.set(kCubinSmAttr, static_cast<std::int64_t>(sm));
  return Status::ok();
}

Expected<std::unique_ptr<CudaKernel>> make_fused_pointwise_kernel(const ir::Node& node) {
  const std::string why = fused_pointwise_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  VOXRT_ASSIGN_OR_RETURN(const int sm, current_sm());
  std::string cubin;
  if (node.attrs.get_int(kCubinSmAttr, -1) == sm && node.attrs.has(kCubinAttr)) {
    cubin = node.attrs.get_string(kCubinAttr, "");
  } else {
    VOXRT_ASSIGN_OR_RETURN(cubin, compile_node(node, sm));
  }
  auto module = std::make_shared<Module>();
  module->image = std::move(cubin);
  // A corrupt or foreign image is refused here by the driver, named, never run.
  const cudaError_t loaded = cudaLibraryLoadData(&module->library, module->image.data(), nullptr,
                                                 nullptr, 0, nullptr, nullptr, 0);
  if (loaded != cudaSuccess) {
    cudaGetLastError();
    return invalid_argument(node.describe(), ": its compiled code (", module->image.size(),
                            " bytes for sm_", sm, ") does not load: ", cudaGetErrorName(loaded),
                            " (", cudaGetErrorString(loaded), ")");
  }
  VOXRT_CUDA_TRY(cudaLibraryGetKernel(&module->flat, module->library, kPointwiseFlatKernel));
  VOXRT_CUDA_TRY(cudaLibraryGetKernel(&module->strided, module->library, kPointwiseStridedKernel));
  return std::unique_ptr<CudaKernel>(new FusedPointwiseKernel(std::move(module)));
}

}  // namespace voxrt::backends::cuda
