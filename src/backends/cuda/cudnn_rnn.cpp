#include "backends/cuda/cudnn_rnn.h"

#include <algorithm>
#include <vector>

#include "backends/cuda/cudnn_api.h"

namespace voxrt::backends::cuda {

namespace rec = voxrt::backends::cpu::recurrent;

bool cudnn_rnn_takes(const ir::Node& node) {
  auto spec = rec::parse_recurrent_spec(node);
  return spec && !spec->reverse_only && (spec->gates == 3 || spec->gates == 4);
}

bool cudnn_rnn_stackable(std::span<const ir::Node* const> layers) {
  if (layers.size() < 2) return false;
  std::int64_t hidden = -1;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const ir::Node& node = *layers[l];
    if (node.op != ir::OpKind::kGRU || !cudnn_rnn_takes(node)) return false;
    auto spec = rec::parse_recurrent_spec(node);
    if (!spec || spec->num_directions != 1 || spec->input_size <= 0) return false;
    if (l == 0) hidden = spec->hidden_size;
    // Each layer above the first reads the one below: its input is the hidden size.
    if (spec->hidden_size != hidden || (l > 0 && spec->input_size != hidden)) return false;
  }
  return true;
}

#if VOXRT_HAVE_CUDNN

namespace {

// cuDNN numbers a cell's matrices 0..G-1 (input side) and G..2G-1 (recurrent side) in its own
// gate order: GRU reset, update, new; LSTM input, forget, cell, output. ONNX stacks GRU gates as
// z (update), r (reset), h and LSTM gates as i, o, f, c. The ONNX gate of cuDNN's gate `g`:
int onnx_gate(int gates, int g) {
  static constexpr int kGru[3] = {1, 0, 2};
  static constexpr int kLstm[4] = {0, 2, 3, 1};
  return gates == 3 ? kGru[g] : kLstm[g];
}

struct RnnConfig {
  rec::RecurrentSpec spec;  // layer 0's; the layers above take its hidden output as input
  ops::LowType data_type = ops::LowType::kF32;
  bool tf32 = false;
  // 1: one ONNX node (inputs X, W, R, B, sequence_lens, initial_h, initial_c; outputs Y, Y_h,
  // Y_c). More: a stack of forward GRU nodes, one cudnnRNNForward over all of them (inputs X,
  // initial_h of each layer; outputs the top layer's Y, Y_h of each layer).
  int layers = 1;

  std::int64_t layer_input_size(int layer) const {
    return layer == 0 ? spec.input_size : spec.hidden_size * spec.num_directions;
  }
};

// A handle and an RNN descriptor for `config.layers` layers, owned together.
class RnnDescriptor {
 public:
  RnnDescriptor(const CudnnApi& api, const CudnnRnnApi& rnn) : api_(api), rnn_(rnn) {}
  RnnDescriptor(const RnnDescriptor&) = delete;
  RnnDescriptor& operator=(const RnnDescriptor&) = delete;
  ~RnnDescriptor() {
    if (desc_) rnn_.destroy_rnn(desc_);
    if (dropout_) rnn_.destroy_dropout(dropout_);
    if (handle_) api_.destroy(handle_);
  }

  Status init(const RnnConfig& config, cudnnRNNAlgo_t algo) {
    const rec::RecurrentSpec& s = config.spec;
    VOXRT_RETURN_IF_ERROR(check(api_.create(&handle_), "cudnnCreate"));
    // One layer has no dropout; the descriptor is still required.
    VOXRT_RETURN_IF_ERROR(check(rnn_.create_dropout(&dropout_), "cudnnCreateDropoutDescriptor"));
    VOXRT_RETURN_IF_ERROR(check(rnn_.set_dropout(dropout_, handle_, 0.0f, nullptr, 0, 0),
                                "cudnnSetDropoutDescriptor"));
    VOXRT_RETURN_IF_ERROR(check(rnn_.create_rnn(&desc_), "cudnnCreateRNNDescriptor"));
    const bool strict_f32 = config.data_type == ops::LowType::kF32 && !config.tf32;
    const cudnnMathType_t math = strict_f32                               ? CUDNN_FMA_MATH
                                 : config.data_type == ops::LowType::kF32 ? CUDNN_DEFAULT_MATH
                                                                          : CUDNN_TENSOR_OP_MATH;
    const auto hidden = static_cast<std::int32_t>(s.hidden_size);
    // Sequences are never padded (no sequence_lens), so the packed layout is the plain
    // [seq, batch, features] one and padded I/O stays off. Accumulation is float in every mode.
    return check(
        rnn_.set_rnn(desc_, algo, s.gates == 3 ? CUDNN_GRU : CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                     s.num_directions == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                     CUDNN_LINEAR_INPUT, cudnn_data_type(config.data_type), CUDNN_DATA_FLOAT, math,
                     static_cast<std::int32_t>(s.input_size), hidden, hidden, config.layers,
                     dropout_, CUDNN_RNN_PADDED_IO_DISABLED),
        "cudnnSetRNNDescriptor_v8");
  }

  // Where each parameter starts in the weight space, in elements: for layer l, direction d,
  // matrix m (cuDNN's numbering) at [((l * D + d) * 2G + m) * 2] and its bias at [... + 1].
  // `space` is any device buffer of the weight space's size (cuDNN only computes addresses
  // inside it).
  Expected<std::vector<std::int64_t>> param_offsets(const RnnConfig& config, void* space,
                                                    std::size_t space_bytes) const {
    const rec::RecurrentSpec& s = config.spec;
    const std::int64_t element_bytes = static_cast<std::int64_t>(low_type_bytes(config.data_type));
    cudnnTensorDescriptor_t m_desc = nullptr, b_desc = nullptr;
    VOXRT_RETURN_IF_ERROR(check(api_.create_tensor(&m_desc), "cudnnCreateTensorDescriptor"));
    Status status = check(api_.create_tensor(&b_desc), "cudnnCreateTensorDescriptor");
    std::vector<std::int64_t> offsets;
    const int pseudo_layers = config.layers * s.num_directions;
    for (int p = 0; p < pseudo_layers && status.is_ok(); ++p) {
      const int d = p % s.num_directions;
      for (int m = 0; m < 2 * s.gates && status.is_ok(); ++m) {
        void* m_addr = nullptr;
        void* b_addr = nullptr;
        status = check(rnn_.get_weight_params(handle_, desc_, p, space_bytes, space, m, m_desc,
                                              &m_addr, b_desc, &b_addr),
                       "cudnnGetRNNWeightParams");
        if (!status.is_ok()) break;
        const std::int64_t cols =
            m < s.gates ? config.layer_input_size(p / s.num_directions) : s.hidden_size;
        const std::int64_t matrix = elements_of(m_desc), bias = elements_of(b_desc);
        if (!m_addr || !b_addr || matrix != s.hidden_size * cols || bias != s.hidden_size) {
          status = internal_error("cuDNN RNN weight space: matrix ", m, " of layer ",
                                  p / s.num_directions, " direction ", d, " has ", matrix,
                                  " weights and ", bias, " biases; expected ", s.hidden_size * cols,
                                  " and ", s.hidden_size);
          break;
        }
        const auto at = [&](void* addr) {
          return (static_cast<char*>(addr) - static_cast<char*>(space)) / element_bytes;
        };
        offsets.push_back(at(m_addr));
        offsets.push_back(at(b_addr));
      }
    }
    if (b_desc) api_.destroy_tensor(b_desc);
    api_.destroy_tensor(m_desc);
    VOXRT_RETURN_IF_ERROR(status);
    return offsets;
  }

  Expected<std::size_t> weight_space_bytes() const {
    std::size_t bytes = 0;
    VOXRT_RETURN_IF_ERROR(
        check(rnn_.get_weight_space_size(handle_, desc_, &bytes), "cudnnGetRNNWeightSpaceSize"));
    return bytes;
  }

  Status check(cudnnStatus_t status, const char* what) const {
    return cudnn_status(api_, status, what);
  }
  cudnnHandle_t handle() const { return handle_; }
  cudnnRNNDescriptor_t desc() const { return desc_; }

 private:
  std::int64_t elements_of(cudnnTensorDescriptor_t desc) const {
    cudnnDataType_t type;
    int rank = 0;
    int dims[8] = {}, strides[8] = {};
    if (rnn_.get_tensor_nd(desc, 8, &type, &rank, dims, strides) != CUDNN_STATUS_SUCCESS) return -1;
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }

  const CudnnApi& api_;
  const CudnnRnnApi& rnn_;
  cudnnHandle_t handle_ = nullptr;
  cudnnDropoutDescriptor_t dropout_ = nullptr;
  cudnnRNNDescriptor_t desc_ = nullptr;
};

// Scratch of one call, as byte offsets (16-bit copies of the inputs and outputs, cuDNN's
// workspace).
struct RnnScratch {
  std::size_t x_low = 0, h_low = 0, c_low = 0, y = 0, y_f32 = 0, hy_low = 0, cy_low = 0;
  // A stack: every layer's initial and final state side by side, in the call's type, when the
  // layers' own tensors are not already so in float.
  std::size_t h_stage = 0, hy_stage = 0;
  std::size_t workspace = 0, total = 0;
};

class CudnnRnnCall final : public CudaCall {
 public:
  CudnnRnnCall(const CudnnApi& api, const CudnnRnnApi& rnn, const RnnConfig& config,
               const void* weights, std::size_t weight_bytes)
      : api_(api),
        rnn_(rnn),
        config_(config),
        descriptor_(api, rnn),
        weights_(weights),
        weight_bytes_(weight_bytes) {}
  ~CudnnRnnCall() override {
    if (x_) rnn_.destroy_rnn_data(x_);
    if (y_) rnn_.destroy_rnn_data(y_);
    if (h_) api_.destroy_tensor(h_);
  }

  Status init(std::int64_t seq, std::int64_t batch, cudnnRNNAlgo_t algo) {
    seq_ = seq;
    batch_ = batch;
    const rec::RecurrentSpec& s = config_.spec;
    const std::int64_t D = s.num_directions, H = s.hidden_size, L = config_.layers;
    VOXRT_RETURN_IF_ERROR(descriptor_.init(config_, algo));
    const auto check = [&](cudnnStatus_t status, const char* what) {
      return descriptor_.check(status, what);
    };
    const cudnnDataType_t type = cudnn_data_type(config_.data_type);
    const std::vector<int> lengths(static_cast<std::size_t>(batch), static_cast<int>(seq));
    VOXRT_RETURN_IF_ERROR(check(rnn_.create_rnn_data(&x_), "cudnnCreateRNNDataDescriptor"));
    VOXRT_RETURN_IF_ERROR(
        check(rnn_.set_rnn_data(x_, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                static_cast<int>(seq), static_cast<int>(batch),
                                static_cast<int>(s.input_size), lengths.data(), nullptr),
              "cudnnSetRNNDataDescriptor(x)"));
    VOXRT_RETURN_IF_ERROR(check(rnn_.create_rnn_data(&y_), "cudnnCreateRNNDataDescriptor"));
    VOXRT_RETURN_IF_ERROR(check(rnn_.set_rnn_data(y_, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                                  static_cast<int>(seq), static_cast<int>(batch),
                                                  static_cast<int>(D * H), lengths.data(), nullptr),
                                "cudnnSetRNNDataDescriptor(y)"));
    VOXRT_RETURN_IF_ERROR(check(api_.create_tensor(&h_), "cudnnCreateTensorDescriptor"));
    const int dims[3] = {static_cast<int>(L * D), static_cast<int>(batch), static_cast<int>(H)};
    const int strides[3] = {static_cast<int>(batch * H), static_cast<int>(H), 1};
    VOXRT_RETURN_IF_ERROR(
        check(rnn_.set_tensor_nd(h_, type, 3, dims, strides), "cudnnSetTensorNdDescriptor(h)"));
    std::size_t workspace = 0, reserve = 0;
    VOXRT_RETURN_IF_ERROR(
        check(rnn_.get_temp_space_sizes(descriptor_.handle(), descriptor_.desc(),
                                        CUDNN_FWD_MODE_INFERENCE, x_, &workspace, &reserve),
              "cudnnGetRNNTempSpaceSizes"));
    // cudnnRNNForward reads the lengths on the device, asynchronously: they live as long as the
    // call.
    VOXRT_ASSIGN_OR_RETURN(seq_lengths_, DeviceBuffer::allocate(lengths.size() * sizeof(int)));
    VOXRT_CUDA_TRY(cudaMemcpy(seq_lengths_->data(), lengths.data(), lengths.size() * sizeof(int),
                              cudaMemcpyHostToDevice));
    // Scratch: 16-bit copies of x, h0, c0 and the outputs; a float y when it must be reordered.
    const bool low = config_.data_type != ops::LowType::kF32;
    const std::size_t lb = low_type_bytes(config_.data_type);
    const auto bytes = [](std::int64_t n, std::size_t each) {
      return align_up(static_cast<std::size_t>(n) * each);
    };
    const std::int64_t state = D * batch * H, y_count = seq * batch * D * H;
    std::size_t at = 0;
    const auto take = [&](std::size_t size) {
      const std::size_t offset = at;
      at += size;
      return offset;
    };
    scratch_.x_low = take(low ? bytes(seq * batch * s.input_size, lb) : 0);
    scratch_.h_low = take(low ? bytes(state, lb) : 0);
    scratch_.c_low = take(low && s.gates == 4 ? bytes(state, lb) : 0);
    scratch_.y = take(bytes(y_count, lb));
    scratch_.y_f32 = take(low && D == 2 ? bytes(y_count, 4) : 0);
    scratch_.hy_low = take(low ? bytes(state, lb) : 0);
    scratch_.cy_low = take(low && s.gates == 4 ? bytes(state, lb) : 0);
    const std::size_t call_bytes = low ? lb : sizeof(float);
    scratch_.h_stage = take(L > 1 ? bytes(L * state, call_bytes) : 0);
    scratch_.hy_stage = take(L > 1 ? bytes(L * state, call_bytes) : 0);
    scratch_.workspace = take(align_up(workspace));
    workspace_bytes_ = workspace;
    scratch_.total = at;
    return Status::ok();
  }

  std::size_t scratch_bytes() const override { return scratch_.total; }

  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    if (config_.layers > 1) return enqueue_stack(in, out, context);
    const rec::RecurrentSpec& s = config_.spec;
    const std::int64_t D = s.num_directions, H = s.hidden_size;
    const std::int64_t state = D * batch_ * H, y_count = seq_ * batch_ * D * H;
    const bool low = config_.data_type != ops::LowType::kF32;
    const ops::LowType type = config_.data_type;
    cudaStream_t stream = context.stream;
    char* base = static_cast<char*>(context.scratch);
    VOXRT_RETURN_IF_ERROR(
        descriptor_.check(api_.set_stream(descriptor_.handle(), stream), "cudnnSetStream"));
    // Inputs in the call's type; a missing initial state is zeros to cuDNN (null pointer).
    const auto staged_input = [&](const DevTensor* t, std::size_t offset,
                                  std::int64_t n) -> Expected<const void*> {
      if (!t || !t->data) return static_cast<const void*>(nullptr);
      if (!low) return static_cast<const void*>(t->data);
      VOXRT_CUDA_TRY(ops::convert_from_f32(t->as<const float>(), base + offset, type, n, stream));
      return static_cast<const void*>(base + offset);
    };
    const DevTensor* h0 = in.size() > 5 ? &in[5] : nullptr;
    const DevTensor* c0 = in.size() > 6 ? &in[6] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(const void* x,
                           staged_input(&in[0], scratch_.x_low, seq_ * batch_ * s.input_size));
    VOXRT_ASSIGN_OR_RETURN(const void* hx, staged_input(h0, scratch_.h_low, state));
    VOXRT_ASSIGN_OR_RETURN(const void* cx, s.gates == 4 ? staged_input(c0, scratch_.c_low, state)
                                                        : Expected<const void*>(nullptr));
    // Outputs: cuDNN writes y as [seq, batch, D, H]; ONNX's Y is [seq, D, batch, H], the same
    // for one direction. Float y of one direction goes straight to the output.
    const DevTensor* y_out = out.size() > 0 && out[0].data ? &out[0] : nullptr;
    const DevTensor* hy_out = out.size() > 1 && out[1].data ? &out[1] : nullptr;
    const DevTensor* cy_out = out.size() > 2 && out[2].data ? &out[2] : nullptr;
    void* y = !low && D == 1 && y_out ? y_out->data : base + scratch_.y;
    void* hy = !hy_out ? nullptr : low ? base + scratch_.hy_low : hy_out->data;
    void* cy = !cy_out || s.gates != 4 ? nullptr : low ? base + scratch_.cy_low : cy_out->data;
    VOXRT_RETURN_IF_ERROR(descriptor_.check(
        rnn_.forward(descriptor_.handle(), descriptor_.desc(), CUDNN_FWD_MODE_INFERENCE,
                     static_cast<const std::int32_t*>(seq_lengths_->data()), x_, x, y_, y, h_, hx,
                     hy, s.gates == 4 ? h_ : nullptr, cx, cy, weight_bytes_, weights_,
                     workspace_bytes_, workspace_bytes_ ? base + scratch_.workspace : nullptr, 0,
                     nullptr),
        "cudnnRNNForward"));
    const auto to_float = [&](const void* from, float* to, std::int64_t n) {
      return ops::bias_activation(from, type, nullptr, 1, n, n, ops::UnaryOp::kIdentity, 0.0f, 0.0f,
                                  to, stream);
    };
    if (y_out && y != y_out->data) {
      const void* y_float = y;
      if (low) {
        float* target =
            D == 1 ? y_out->as<float>() : reinterpret_cast<float*>(base + scratch_.y_f32);
        VOXRT_CUDA_TRY(to_float(y, target, y_count));
        y_float = target;
      }
      if (D == 2) {
        ops::StridedCopy copy;  // [seq, batch, D, H] -> [seq, D, batch, H]
        copy.rank = 4;
        const std::int64_t dims[4] = {seq_, D, batch_, H};
        const std::int64_t in_strides[4] = {batch_ * D * H, H, D * H, 1};
        const std::int64_t out_strides[4] = {D * batch_ * H, batch_ * H, H, 1};
        for (int i = 0; i < 4; ++i) {
          copy.dims[i] = dims[i];
          copy.in_strides[i] = in_strides[i];
          copy.out_strides[i] = out_strides[i];
        }
        VOXRT_CUDA_TRY(ops::strided_copy(y_float, y_out->data, 4, copy, stream));
      }
    }
    if (low && hy_out) VOXRT_CUDA_TRY(to_float(hy, hy_out->as<float>(), state));
    if (low && cy) VOXRT_CUDA_TRY(to_float(cy, cy_out->as<float>(), state));
    return Status::ok();
  }

 private:
  // A stack of forward GRU layers: in = X, initial_h of each layer (absent: zeros); out = the
  // top layer's Y, Y_h of each layer.
  Status enqueue_stack(std::span<const DevTensor> in, std::span<const DevTensor> out,
                       const CudaRunContext& context) const {
    const rec::RecurrentSpec& s = config_.spec;
    const int L = config_.layers;
    const std::int64_t state = batch_ * s.hidden_size, y_count = seq_ * state;
    const bool low = config_.data_type != ops::LowType::kF32;
    const ops::LowType type = config_.data_type;
    const std::size_t call_bytes = low ? low_type_bytes(type) : sizeof(float);
    const std::size_t state_bytes = static_cast<std::size_t>(state) * call_bytes;
    cudaStream_t stream = context.stream;
    char* base = static_cast<char*>(context.scratch);
    VOXRT_RETURN_IF_ERROR(
        descriptor_.check(api_.set_stream(descriptor_.handle(), stream), "cudnnSetStream"));
    const void* x = in[0].data;
    if (low) {
      VOXRT_CUDA_TRY(ops::convert_from_f32(in[0].as<const float>(), base + scratch_.x_low, type,
                                           seq_ * batch_ * s.input_size, stream));
      x = base + scratch_.x_low;
    }
    // The layers' tensors used in place when they already lie side by side in float (the
    // slices of one [layers, batch, hidden] state, a Concat's parts), else staged.
    const auto side_by_side = [&](std::span<const DevTensor> parts) {
      for (int l = 0; l < L; ++l) {
        const auto& t = parts[static_cast<std::size_t>(l)];
        if (low || !t.data ||
            t.data != static_cast<char*>(parts[0].data) + static_cast<std::size_t>(l) * state_bytes)
          return false;
      }
      return true;
    };
    const auto present = [&](std::span<const DevTensor> parts) {
      for (const auto& t : parts.first(static_cast<std::size_t>(L)))
        if (t.data) return true;
      return false;
    };
    const std::span<const DevTensor> h_in = in.subspan(1), h_out = out.subspan(1);
    const void* hx = nullptr;
    if (present(h_in)) {
      if (side_by_side(h_in)) {
        hx = h_in[0].data;
      } else {
        char* stage = base + scratch_.h_stage;
        for (int l = 0; l < L; ++l) {
          char* to = stage + static_cast<std::size_t>(l) * state_bytes;
          const DevTensor& t = h_in[static_cast<std::size_t>(l)];
          if (!t.data) {
            VOXRT_CUDA_TRY(cudaMemsetAsync(to, 0, state_bytes, stream));
          } else if (low) {
            VOXRT_CUDA_TRY(ops::convert_from_f32(t.as<const float>(), to, type, state, stream));
          } else {
            VOXRT_CUDA_TRY(
                cudaMemcpyAsync(to, t.data, state_bytes, cudaMemcpyDeviceToDevice, stream));
          }
        }
        hx = stage;
      }
    }
    const bool hy_in_place = present(h_out) && side_by_side(h_out);
    void* hy = !present(h_out) ? nullptr : hy_in_place ? h_out[0].data : base + scratch_.hy_stage;
    const DevTensor* y_out = out[0].data ? &out[0] : nullptr;
    void* y = !low && y_out ? y_out->data : base + scratch_.y;
    VOXRT_RETURN_IF_ERROR(descriptor_.check(
        rnn_.forward(descriptor_.handle(), descriptor_.desc(), CUDNN_FWD_MODE_INFERENCE,
                     static_cast<const std::int32_t*>(seq_lengths_->data()), x_, x, y_, y, h_, hx,
                     hy, nullptr, nullptr, nullptr, weight_bytes_, weights_, workspace_bytes_,
                     workspace_bytes_ ? base + scratch_.workspace : nullptr, 0, nullptr),
        "cudnnRNNForward (stack)"));
    const auto to_float = [&](const void* from, float* to, std::int64_t n) {
      return ops::bias_activation(from, type, nullptr, 1, n, n, ops::UnaryOp::kIdentity, 0.0f, 0.0f,
                                  to, stream);
    };
    if (y_out && low) VOXRT_CUDA_TRY(to_float(y, y_out->as<float>(), y_count));
    if (hy && !hy_in_place) {
      for (int l = 0; l < L; ++l) {
        const DevTensor& t = h_out[static_cast<std::size_t>(l)];
        if (!t.data) continue;
        const char* from = static_cast<const char*>(hy) + static_cast<std::size_t>(l) * state_bytes;
        if (low) {
          VOXRT_CUDA_TRY(to_float(from, t.as<float>(), state));
        } else {
          VOXRT_CUDA_TRY(
              cudaMemcpyAsync(t.data, from, state_bytes, cudaMemcpyDeviceToDevice, stream));
        }
      }
    }
    return Status::ok();
  }

  const CudnnApi& api_;
  const CudnnRnnApi& rnn_;
  RnnConfig config_;
  RnnDescriptor descriptor_;
  const void* weights_;
  std::size_t weight_bytes_;
  std::int64_t seq_ = 0, batch_ = 0;
  cudnnRNNDataDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnTensorDescriptor_t h_ = nullptr;  // h and c: [D, batch, H]
  std::shared_ptr<DeviceBuffer> seq_lengths_;
  std::size_t workspace_bytes_ = 0;
  RnnScratch scratch_;
};

class CudnnRnnKernel final : public CudaKernel {
 public:
  CudnnRnnKernel(const CudnnApi& api, const CudnnRnnApi& rnn, RnnConfig config, cudnnRNNAlgo_t algo)
      : api_(api), rnn_(rnn), config_(std::move(config)), algo_(algo) {}

  // Packs W, R and B of every layer (`nodes`, bottom first) into cuDNN's weight space (in the
  // call's type) on the device. Failures are kept for prepare() (see make_cudnn_rnn_kernel).
  Status init(std::span<const ir::Node* const> nodes, KernelBuildContext& build) {
    const rec::RecurrentSpec& s = config_.spec;
    RnnDescriptor descriptor(api_, rnn_);
    VOXRT_RETURN_IF_ERROR(descriptor.init(config_, algo_));
    VOXRT_ASSIGN_OR_RETURN(weight_bytes_, descriptor.weight_space_bytes());
    // cuDNN computes the parameters' addresses inside a weight space; any buffer of its size.
    VOXRT_ASSIGN_OR_RETURN(auto probe, DeviceBuffer::allocate(weight_bytes_));
    VOXRT_ASSIGN_OR_RETURN(std::vector<std::int64_t> offsets,
                           descriptor.param_offsets(config_, probe->data(), weight_bytes_));
    if (algo_ != CUDNN_RNN_ALGO_STANDARD) {
      // Shapes the persistent algorithm refuses fall back to the standard one, on the same
      // weights when their layout is the same.
      RnnDescriptor standard(api_, rnn_);
      VOXRT_RETURN_IF_ERROR(standard.init(config_, CUDNN_RNN_ALGO_STANDARD));
      VOXRT_ASSIGN_OR_RETURN(std::size_t standard_bytes, standard.weight_space_bytes());
      if (standard_bytes == weight_bytes_) {
        auto standard_offsets = standard.param_offsets(config_, probe->data(), weight_bytes_);
        standard_shares_weights_ = standard_offsets && *standard_offsets == offsets;
      }
    }
    probe.reset();
    const std::size_t element_bytes = low_type_bytes(config_.data_type);
    std::vector<float> space((weight_bytes_ + element_bytes - 1) / element_bytes, 0.0f);
    const std::int64_t G = s.gates, H = s.hidden_size;
    std::size_t next = 0;
    for (std::int64_t p = 0; p < config_.layers * s.num_directions; ++p) {
      const ir::Node& node = *nodes[static_cast<std::size_t>(p / s.num_directions)];
      const std::int64_t d = p % s.num_directions;
      const std::int64_t I = config_.layer_input_size(static_cast<int>(p / s.num_directions));
      const float* w = node.input(1)->constant->data<float>();
      const float* r = node.input(2)->constant->data<float>();
      const float* b = node.input(3) ? node.input(3)->constant->data<float>() : nullptr;
      for (std::int64_t m = 0; m < 2 * G; ++m) {
        const bool recurrent = m >= G;
        const std::int64_t gate = onnx_gate(static_cast<int>(G), static_cast<int>(m % G));
        const std::int64_t cols = recurrent ? H : I;
        const float* matrix = (recurrent ? r : w) + (d * G * H + gate * H) * cols;
        const auto matrix_at = static_cast<std::size_t>(offsets[next++]);
        const auto bias_at = static_cast<std::size_t>(offsets[next++]);
        std::copy(matrix, matrix + H * cols,
                  space.begin() + static_cast<std::ptrdiff_t>(matrix_at));
        if (b) {
          const float* bias = b + d * 2 * G * H + (recurrent ? G * H : 0) + gate * H;
          std::copy(bias, bias + H, space.begin() + static_cast<std::ptrdiff_t>(bias_at));
        }
      }
    }
    VOXRT_ASSIGN_OR_RETURN(weights_, build.upload_f32(space, config_.data_type));
    return Status::ok();
  }
  void set_init_status(Status status) { init_status_ = std::move(status); }

  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t) const override {
    VOXRT_RETURN_IF_ERROR(init_status_);
    const Dims& x = in[0].dims;
    if (x.size() != 3) return invalid_argument("recurrent X must be [seq, batch, input]");
    auto make = [&](cudnnRNNAlgo_t algo) -> Expected<std::unique_ptr<CudaCall>> {
      auto call = std::make_unique<CudnnRnnCall>(api_, rnn_, config_, weights_, weight_bytes_);
      VOXRT_RETURN_IF_ERROR(call->init(x[0], x[1], algo));
      return std::unique_ptr<CudaCall>(std::move(call));
    };
    auto call = make(algo_);
    if (!call && call.status().code() == StatusCode::kUnsupported && standard_shares_weights_)
      return make(CUDNN_RNN_ALGO_STANDARD);
    return call;
  }

 private:
  const CudnnApi& api_;
  const CudnnRnnApi& rnn_;
  RnnConfig config_;
  cudnnRNNAlgo_t algo_;
  Status init_status_ = Status::ok();
  const void* weights_ = nullptr;
  std::size_t weight_bytes_ = 0;
  bool standard_shares_weights_ = false;
};

}  // namespace

Expected<std::unique_ptr<CudaKernel>> make_cudnn_rnn_kernel(const ir::Node& node,
                                                            const rec::RecurrentSpec& spec,
                                                            TacticId tactic,
                                                            KernelBuildContext& build) {
  VOXRT_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  VOXRT_ASSIGN_OR_RETURN(const CudnnRnnApi* rnn, cudnn_rnn_api());
  if (!cudnn_rnn_takes(node)) return unsupported(node.describe(), ": not a cuDNN RNN");
  RnnConfig config;
  config.spec = spec;
  // The _f32 tactic is the FP32 engine's layer at any precision: float data, FMA math.
  const bool f32_data = tactic == kRecurrentCudnnPersistStaticF32;
  config.data_type = f32_data ? ops::LowType::kF32 : low_type_for(build.precision());
  config.tf32 = !f32_data && build.precision() == Precision::kTf32;
  const cudnnRNNAlgo_t algo =
      tactic == kRecurrentCudnnStandard ? CUDNN_RNN_ALGO_STANDARD : CUDNN_RNN_ALGO_PERSIST_STATIC;
  auto kernel = std::make_unique<CudnnRnnKernel>(*api, *rnn, std::move(config), algo);
  const ir::Node* const nodes[1] = {&node};
  Status packed = kernel->init(nodes, build);
  // cuDNN refusing a descriptor (a type, a size) means the tactic cannot run, which the tuner
  // learns from prepare(); a failing device call is an error now.
  if (!packed.is_ok() && packed.code() != StatusCode::kUnsupported) return packed;
  kernel->set_init_status(std::move(packed));
  return std::unique_ptr<CudaKernel>(std::move(kernel));
}

Expected<std::unique_ptr<CudaKernel>> make_cudnn_rnn_stack_kernel(
    std::span<const ir::Node* const> layers, KernelBuildContext& build) {
  VOXRT_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  VOXRT_ASSIGN_OR_RETURN(const CudnnRnnApi* rnn, cudnn_rnn_api());
  if (!cudnn_rnn_stackable(layers))
    return unsupported("these recurrent nodes do not form a stack cuDNN can run as one");
  VOXRT_ASSIGN_OR_RETURN(rec::RecurrentSpec spec, rec::parse_recurrent_spec(*layers[0]));
  RnnConfig config;
  config.spec = spec;
  config.data_type = low_type_for(build.precision());
  config.tf32 = build.precision() == Precision::kTf32;
  config.layers = static_cast<int>(layers.size());
  // The standard algorithm: the persistent one is for small batches, where one layer per
  // call already runs on chip.
  auto kernel =
      std::make_unique<CudnnRnnKernel>(*api, *rnn, std::move(config), CUDNN_RNN_ALGO_STANDARD);
  Status packed = kernel->init(layers, build);
  if (!packed.is_ok() && packed.code() != StatusCode::kUnsupported) return packed;
  kernel->set_init_status(std::move(packed));
  return std::unique_ptr<CudaKernel>(std::move(kernel));
}

#else

Expected<std::unique_ptr<CudaKernel>> make_cudnn_rnn_kernel(const ir::Node&,
                                                            const rec::RecurrentSpec&, TacticId,
                                                            KernelBuildContext&) {
  return unsupported("this build has no cuDNN support");
}

Expected<std::unique_ptr<CudaKernel>> make_cudnn_rnn_stack_kernel(std::span<const ir::Node* const>,
                                                                  KernelBuildContext&) {
  return unsupported("this build has no cuDNN support");
}

#endif

}  // namespace voxrt::backends::cuda
