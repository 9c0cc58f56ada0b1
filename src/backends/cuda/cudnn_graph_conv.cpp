#include "backends/cuda/cudnn_graph_conv.h"

#include <array>
#include <utility>
#include <vector>

namespace voxrt::backends::cuda {

#if VOXRT_HAVE_CUDNN

namespace {

// The graph's tensor ids (any distinct numbers; the variant pack names the pointers by them).
constexpr std::int64_t kXId = 'x', kWId = 'w', kYId = 'y';
// Our arena and scratch offsets are 256-byte aligned; 16 is what the vectorised engines ask.
constexpr std::int64_t kAlignmentBytes = 16;

struct Apis {
  const CudnnApi& api;
  const CudnnGraphApi& graph;
};

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(const CudnnGraphApi& graph) : graph_(&graph) {}
  Descriptor(Descriptor&& other) noexcept
      : graph_(other.graph_), handle_(std::exchange(other.handle_, nullptr)) {}
  Descriptor& operator=(Descriptor&&) = delete;
  Descriptor(const Descriptor&) = delete;
  ~Descriptor() {
    if (handle_) graph_->destroy_descriptor(handle_);
  }
  cudnnBackendDescriptor_t get() const { return handle_; }
  cudnnBackendDescriptor_t* out() { return &handle_; }

 private:
  const CudnnGraphApi* graph_;
  cudnnBackendDescriptor_t handle_ = nullptr;
};

Expected<Descriptor> create(const Apis& a, cudnnBackendDescriptorType_t type, const char* what) {
  Descriptor d(a.graph);
  VOXRT_RETURN_IF_ERROR(cudnn_status(a.api, a.graph.create_descriptor(type, d.out()), what));
  return d;
}

Status set(const Apis& a, const Descriptor& d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, std::int64_t count, const void* values,
           const char* what) {
  return cudnn_status(a.api, a.graph.set_attribute(d.get(), name, type, count, values), what);
}

Expected<Descriptor> make_tensor(const Apis& a, std::int64_t id, cudnnDataType_t type,
                                 const std::array<std::int64_t, 4>& dims, bool channels_last) {
  VOXRT_ASSIGN_OR_RETURN(Descriptor t,
                         create(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "create tensor descriptor"));
  const std::int64_t c = dims[1], h = dims[2], w = dims[3];
  const std::array<std::int64_t, 4> strides =
      channels_last ? std::array<std::int64_t, 4>{c * h * w, 1, w * c, c}
                    : std::array<std::int64_t, 4>{c * h * w, h * w, w, 1};
  VOXRT_RETURN_IF_ERROR(
      set(a, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor data type"));
  VOXRT_RETURN_IF_ERROR(set(a, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(),
                            "tensor dimensions"));
  VOXRT_RETURN_IF_ERROR(
      set(a, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), "tensor strides"));
  VOXRT_RETURN_IF_ERROR(
      set(a, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, "tensor unique id"));
  VOXRT_RETURN_IF_ERROR(set(a, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                            &kAlignmentBytes, "tensor alignment"));
  VOXRT_RETURN_IF_ERROR(cudnn_status(a.api, a.graph.finalize(t.get()), "finalize tensor"));
  return t;
}

// The notes of the engine behind an engine configuration.
struct EngineNotes {
  std::int64_t global_index = -1;
  bool runtime_compiled = false, tensor_core = false, transform = false;
};

Expected<EngineNotes> engine_notes(const Apis& a, const Descriptor& config) {
  VOXRT_ASSIGN_OR_RETURN(Descriptor engine,
                         create(a, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "create engine descriptor"));
  std::int64_t n = 0;
  cudnnBackendDescriptor_t raw = engine.get();
  VOXRT_RETURN_IF_ERROR(
      cudnn_status(a.api,
                   a.graph.get_attribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw),
                   "engine of a configuration"));
  EngineNotes notes;
  VOXRT_RETURN_IF_ERROR(
      cudnn_status(a.api,
                   a.graph.get_attribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                         CUDNN_TYPE_INT64, 1, &n, &notes.global_index),
                   "engine global index"));
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behavior{};
  VOXRT_RETURN_IF_ERROR(cudnn_status(
      a.api,
      a.graph.get_attribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                            static_cast<std::int64_t>(behavior.size()), &n, behavior.data()),
      "engine behaviour notes"));
  for (std::int64_t i = 0; i < n && i < static_cast<std::int64_t>(behavior.size()); ++i)
    notes.runtime_compiled |=
        behavior[static_cast<std::size_t>(i)] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> numerical{};
  VOXRT_RETURN_IF_ERROR(cudnn_status(
      a.api,
      a.graph.get_attribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                            CUDNN_TYPE_NUMERICAL_NOTE, static_cast<std::int64_t>(numerical.size()),
                            &n, numerical.data()),
      "engine numerical notes"));
  for (std::int64_t i = 0; i < n && i < static_cast<std::int64_t>(numerical.size()); ++i) {
    const cudnnBackendNumericalNote_t note = numerical[static_cast<std::size_t>(i)];
    notes.tensor_core |= note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
    notes.transform |= note == CUDNN_NUMERICAL_NOTE_FFT || note == CUDNN_NUMERICAL_NOTE_WINOGRAD;
  }
  return notes;
}

class GraphConvPlan final : public CudnnGraphConv {
 public:
  GraphConvPlan(Apis apis, Descriptor plan, std::size_t workspace_bytes, std::string name)
      : apis_(apis),
        plan_(std::move(plan)),
        workspace_bytes_(workspace_bytes),
        name_(std::move(name)) {}

  std::size_t workspace_bytes() const override { return workspace_bytes_; }
  const std::string& engine_name() const override { return name_; }

  Status execute(cudnnHandle_t handle, const void* x, const void* w, void* y,
                 void* workspace) const override {
    // The pointers change between calls (autotuning, several contexts), so the variant pack is
    // made per call; inside a CUDA graph this host work is paid once, at capture.
    VOXRT_ASSIGN_OR_RETURN(Descriptor pack, create(apis_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                                   "create variant pack"));
    const std::array<std::int64_t, 3> ids{kXId, kWId, kYId};
    std::array<void*, 3> pointers{const_cast<void*>(x), const_cast<void*>(w), y};
    VOXRT_RETURN_IF_ERROR(set(apis_, pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3,
                              ids.data(), "variant pack ids"));
    VOXRT_RETURN_IF_ERROR(set(apis_, pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                              CUDNN_TYPE_VOID_PTR, 3, pointers.data(), "variant pack pointers"));
    VOXRT_RETURN_IF_ERROR(set(apis_, pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                              1, &workspace, "variant pack workspace"));
    VOXRT_RETURN_IF_ERROR(
        cudnn_status(apis_.api, apis_.graph.finalize(pack.get()), "finalize variant pack"));
    return cudnn_status(apis_.api, apis_.graph.execute(handle, plan_.get(), pack.get()),
                        "cudnnBackendExecute (convolution)");
  }

 private:
  Apis apis_;
  Descriptor plan_;
  std::size_t workspace_bytes_;
  std::string name_;
};

}  // namespace

Expected<std::unique_ptr<CudnnGraphConv>> make_cudnn_graph_conv(cudnnHandle_t handle,
                                                                const CudnnConvShape& s, int rank,
                                                                std::size_t max_workspace_bytes) {
  VOXRT_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  VOXRT_ASSIGN_OR_RETURN(const CudnnGraphApi* graph_api, cudnn_graph_api());
  const Apis a{*api, *graph_api};
  if (s.nhwc && s.data_type == ops::LowType::kF32)
    return unsupported("cuDNN NHWC tactics are for FP16/BF16 data only");
  const cudnnDataType_t type = cudnn_data_type(s.data_type);
  VOXRT_ASSIGN_OR_RETURN(
      Descriptor x, make_tensor(a, kXId, type, {s.batch, s.channels, s.height, s.width}, s.nhwc));
  VOXRT_ASSIGN_OR_RETURN(
      Descriptor w,
      make_tensor(a, kWId, type, {s.out_channels, s.channels, s.kernel_h, s.kernel_w}, s.nhwc));
  VOXRT_ASSIGN_OR_RETURN(
      Descriptor y,
      make_tensor(a, kYId, type, {s.batch, s.out_channels, s.out_h, s.out_w}, s.nhwc));

  VOXRT_ASSIGN_OR_RETURN(Descriptor conv, create(a, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                                                 "create convolution descriptor"));
  // Cross-correlation (what ONNX Conv computes), accumulating in float.
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial_dims = 2;
  const std::array<std::int64_t, 2> dilations{s.dilation_h, s.dilation_w};
  const std::array<std::int64_t, 2> strides{s.stride_h, s.stride_w};
  const std::array<std::int64_t, 2> pads{s.pad_h, s.pad_w};
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                            &compute, "convolution compute type"));
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                            1, &mode, "convolution mode"));
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1,
                            &spatial_dims, "convolution spatial dims"));
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2,
                            dilations.data(), "convolution dilations"));
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
                            strides.data(), "convolution strides"));
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2,
                            pads.data(), "convolution pre-paddings"));
  VOXRT_RETURN_IF_ERROR(set(a, conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
                            pads.data(), "convolution post-paddings"));
  VOXRT_RETURN_IF_ERROR(cudnn_status(a.api, a.graph.finalize(conv.get()), "finalize convolution"));

  VOXRT_ASSIGN_OR_RETURN(Descriptor op,
                         create(a, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                "create convolution operation"));
  const float one = 1.0f, zero = 0.0f;
  cudnnBackendDescriptor_t raw = x.get();
  VOXRT_RETURN_IF_ERROR(set(a, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, "operation x"));
  raw = w.get();
  VOXRT_RETURN_IF_ERROR(set(a, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, "operation w"));
  raw = y.get();
  VOXRT_RETURN_IF_ERROR(set(a, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, "operation y"));
  raw = conv.get();
  VOXRT_RETURN_IF_ERROR(set(a, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, "operation convolution"));
  VOXRT_RETURN_IF_ERROR(set(a, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT,
                            1, &one, "operation alpha"));
  VOXRT_RETURN_IF_ERROR(set(a, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT,
                            1, &zero, "operation beta"));
  VOXRT_RETURN_IF_ERROR(
      cudnn_status(a.api, a.graph.finalize(op.get()), "finalize convolution operation"));

  VOXRT_ASSIGN_OR_RETURN(Descriptor op_graph, create(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                                     "create operation graph"));
  raw = op.get();
  VOXRT_RETURN_IF_ERROR(set(a, op_graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, "operation graph ops"));
  VOXRT_RETURN_IF_ERROR(set(a, op_graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                            &handle, "operation graph handle"));
  VOXRT_RETURN_IF_ERROR(
      cudnn_status(a.api, a.graph.finalize(op_graph.get()), "finalize operation graph"));

  VOXRT_ASSIGN_OR_RETURN(Descriptor heuristic,
                         create(a, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "create engine heuristic"));
  raw = op_graph.get();
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  VOXRT_RETURN_IF_ERROR(set(a, heuristic, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, "heuristic graph"));
  VOXRT_RETURN_IF_ERROR(set(a, heuristic, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                            &heur_mode, "heuristic mode"));
  VOXRT_RETURN_IF_ERROR(
      cudnn_status(a.api, a.graph.finalize(heuristic.get()), "finalize engine heuristic"));
  std::int64_t count = 0;
  VOXRT_RETURN_IF_ERROR(
      cudnn_status(a.api,
                   a.graph.get_attribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                   "heuristic result count"));
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw_configs;
  for (std::int64_t i = 0; i < count; ++i) {
    VOXRT_ASSIGN_OR_RETURN(Descriptor config, create(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                                     "create engine configuration"));
    raw_configs.push_back(config.get());
    configs.push_back(std::move(config));
  }
  std::int64_t returned = 0;
  if (count > 0) {
    VOXRT_RETURN_IF_ERROR(cudnn_status(
        a.api,
        a.graph.get_attribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw_configs.data()),
        "heuristic results"));
  }
  const bool strict_f32 = s.data_type == ops::LowType::kF32 && !s.tf32;
  int usable = 0;
  std::string passed_over;
  for (std::int64_t i = 0; i < returned && i < count; ++i) {
    const Descriptor& config = configs[static_cast<std::size_t>(i)];
    Expected<EngineNotes> notes = engine_notes(a, config);
    if (!notes) continue;
    if (notes->runtime_compiled || (strict_f32 && (notes->tensor_core || notes->transform))) {
      continue;
    }
    VOXRT_ASSIGN_OR_RETURN(Descriptor plan, create(a, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                                   "create execution plan"));
    cudnnBackendDescriptor_t raw_config = config.get();
    if (!set(a, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle,
             "plan handle")
             .is_ok() ||
        !set(a, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &raw_config, "plan configuration")
             .is_ok() ||
        a.graph.finalize(plan.get()) != CUDNN_STATUS_SUCCESS) {
      continue;  // the heuristic also ranks configurations that cannot make a plan
    }
    std::int64_t workspace = 0, n = 0;
    if (a.graph.get_attribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                              CUDNN_TYPE_INT64, 1, &n, &workspace) != CUDNN_STATUS_SUCCESS ||
        workspace < 0 || static_cast<std::size_t>(workspace) > max_workspace_bytes) {
      passed_over =
          str_cat(" (engine ", notes->global_index, " wants ", workspace, " bytes of workspace)");
      continue;
    }
    if (usable++ < rank) continue;
    return std::unique_ptr<CudnnGraphConv>(
        new GraphConvPlan(a, std::move(plan), static_cast<std::size_t>(workspace),
                          str_cat("engine ", notes->global_index)));
  }
  return unsupported("cuDNN's heuristic ranks ", usable,
                     " usable engine configurations for this convolution; graph tactic ", rank,
                     " needs ", rank + 1, passed_over);
}

#endif

}  // namespace voxrt::backends::cuda
