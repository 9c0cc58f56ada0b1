// Tactic "onednn": oneDNN 2.6 RNN primitives (vanilla_rnn, vanilla_lstm, vanilla_gru, lbr_gru)
// for nodes they can express: default activations (RNN: Tanh, Relu or Sigmoid), no clip, no
// peepholes or input_forget, constant weights. Ragged sequence_lens, which oneDNN cannot
// express, are handed to the blas tactic at run time.
//
// Weights are reordered at creation from ONNX [D, G*H, K] to oneDNN's ldigo with its gate order
// (LSTM i,f,c,o instead of ONNX i,o,f,c; GRU u,r,o = ONNX z,r,h). Primitives depend on the
// runtime (seq, batch), so they and their packed weights are cached per shape behind a mutex.
// Scratchpads are allocated per call (user scratchpad mode), so one kernel serves concurrent
// callers. oneDNN here runs on OpenMP (the thread count is the calling thread's own OpenMP
// setting), always with one thread: its workers are a second pool beside ours, and with a
// barrier per time step they collapse when the cores are shared (a GRU layer went from 24 ms on
// 1 thread to 1.2 s on 2 under load). The packed tactic is the multithreaded one.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "backends/cpu/dense/onednn_common.h"
#include "backends/cpu/recurrent/recurrent_kernels.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::recurrent {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// libgomp is loaded by libdnnl; its omp_set_num_threads sets the calling thread's team size.
void set_openmp_threads(int threads) {
  using SetThreads = void (*)(int);
  static const SetThreads set_threads =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set_threads) set_threads(threads);
}

// ONNX gate index for each oneDNN gate.
std::vector<int> onednn_gate_order(CellKind cell) {
  switch (cell) {
    case CellKind::kLstm: return {0, 2, 3, 1};
    case CellKind::kGru: return {0, 1, 2};
    case CellKind::kRnn: return {0};
  }
  return {};
}

struct ShapeEntry {
  std::unique_ptr<dnnl::primitive> primitive;
  memory::desc scratchpad_desc;
  memory weights_layer, weights_iter;
};

class OnednnKernel final : public Kernel {
 public:
  OnednnKernel(RecurrentSpec spec, std::unique_ptr<Kernel> ragged_fallback, const Tensor& w,
               const Tensor& r, const Tensor* b)
      : spec_(std::move(spec)),
        ragged_fallback_(std::move(ragged_fallback)),
        engine_(dnnl::engine::kind::cpu, 0) {
    const std::int64_t hidden = spec_.hidden_size, input = spec_.input_size;
    const int gates = spec_.gates, dirs = spec_.num_directions;
    const std::vector<int> order = onednn_gate_order(spec_.cell);
    weights_layer_.assign(static_cast<std::size_t>(dirs * input * gates * hidden), 0.0f);
    weights_iter_.assign(static_cast<std::size_t>(dirs * hidden * gates * hidden), 0.0f);
    bias_gates_ = gates + (spec_.linear_before_reset ? 1 : 0);
    bias_.assign(static_cast<std::size_t>(dirs * bias_gates_ * hidden), 0.0f);
    for (int d = 0; d < dirs; ++d) {
      const float* w_d = w.data<float>() + d * gates * hidden * input;
      const float* r_d = r.data<float>() + d * gates * hidden * hidden;
      for (int g = 0; g < gates; ++g) {
        const std::int64_t onnx_row0 = order[static_cast<std::size_t>(g)] * hidden;
        for (std::int64_t o = 0; o < hidden; ++o) {
          for (std::int64_t i = 0; i < input; ++i) {
            weights_layer_[((d * input + i) * gates + g) * hidden + o] =
                w_d[(onnx_row0 + o) * input + i];
          }
          for (std::int64_t i = 0; i < hidden; ++i) {
            weights_iter_[((d * hidden + i) * gates + g) * hidden + o] =
                r_d[(onnx_row0 + o) * hidden + i];
          }
        }
      }
      if (!b) continue;
      const float* wb = b->data<float>() + d * 2 * gates * hidden;
      const float* rb = wb + gates * hidden;
      for (int g = 0; g < gates; ++g) {
        const std::int64_t onnx_row0 = order[static_cast<std::size_t>(g)] * hidden;
        const bool split = spec_.linear_before_reset && g == 2;
        for (std::int64_t o = 0; o < hidden; ++o) {
          bias_[(d * bias_gates_ + g) * hidden + o] =
              wb[onnx_row0 + o] + (split ? 0.0f : rb[onnx_row0 + o]);
          if (split) bias_[(d * bias_gates_ + 3) * hidden + o] = rb[onnx_row0 + o];
        }
      }
    }
  }

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    VOXRT_ASSIGN_OR_RETURN(RecurrentIo io, bind_recurrent_io(spec_, inputs, outputs));
    if (!io.all_full_length) return ragged_fallback_->run(inputs, outputs, context);
    if (io.batch == 0 || io.seq_length == 0) {
      // Nothing to run; states pass through (zero-sized primitives are not worth creating).
      return ragged_fallback_->run(inputs, outputs, context);
    }
    try {
      return execute(io, context);
    } catch (const dnnl::error& e) {
      return internal_error("recurrent onednn tactic: ", e.what());
    } catch (const std::exception& e) {
      return internal_error("recurrent onednn tactic: ", e.what());
    }
  }

 private:
  memory::dims state_dims(std::int64_t batch) const {
    return {1, spec_.num_directions, batch, spec_.hidden_size};
  }

  dnnl::rnn_direction direction() const {
    if (spec_.num_directions == 2) return dnnl::rnn_direction::bidirectional_concat;
    return spec_.reverse_only ? dnnl::rnn_direction::unidirectional_right2left
                              : dnnl::rnn_direction::unidirectional_left2right;
  }

  std::shared_ptr<ShapeEntry> entry_for(std::int64_t seq, std::int64_t batch) const {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto key = std::make_pair(seq, batch);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCachedShapes) cache_.clear();  // in-flight entries stay alive

    const std::int64_t hidden = spec_.hidden_size, dirs = spec_.num_directions;
    const memory::desc src_layer({seq, batch, spec_.input_size}, dt::f32,
                                 spec_.layout == 0 ? tag::tnc : tag::ntc);
    const memory::desc dst_layer({seq, batch, dirs * hidden}, dt::f32, tag::tnc);
    const memory::desc state(state_dims(batch), dt::f32, tag::ldnc);
    const memory::desc any_layer({1, dirs, spec_.input_size, spec_.gates, hidden}, dt::f32,
                                 tag::any);
    const memory::desc any_iter({1, dirs, hidden, spec_.gates, hidden}, dt::f32, tag::any);
    const memory::desc bias({1, dirs, bias_gates_, hidden}, dt::f32, tag::ldgo);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto prop = dnnl::prop_kind::forward_inference;

    auto entry = std::make_shared<ShapeEntry>();
    memory::desc weights_layer_desc, weights_iter_desc;
    switch (spec_.cell) {
      case CellKind::kRnn: {
        const ActivationKind act = spec_.activation(0, 0).kind;
        const dnnl::algorithm algorithm =
            act == ActivationKind::kRelu      ? dnnl::algorithm::eltwise_relu
            : act == ActivationKind::kSigmoid ? dnnl::algorithm::eltwise_logistic
                                              : dnnl::algorithm::eltwise_tanh;
        dnnl::vanilla_rnn_forward::desc desc(prop, algorithm, direction(), src_layer, state,
                                             any_layer, any_iter, bias, dst_layer, state);
        dnnl::vanilla_rnn_forward::primitive_desc pd(desc, attr, engine_);
        weights_layer_desc = pd.weights_layer_desc();
        weights_iter_desc = pd.weights_iter_desc();
        entry->scratchpad_desc = pd.scratchpad_desc();
        entry->primitive = std::make_unique<dnnl::vanilla_rnn_forward>(pd);
        break;
      }
      case CellKind::kGru:
        if (spec_.linear_before_reset) {
          dnnl::lbr_gru_forward::desc desc(prop, direction(), src_layer, state, any_layer, any_iter,
                                           bias, dst_layer, state);
          dnnl::lbr_gru_forward::primitive_desc pd(desc, attr, engine_);
          weights_layer_desc = pd.weights_layer_desc();
          weights_iter_desc = pd.weights_iter_desc();
          entry->scratchpad_desc = pd.scratchpad_desc();
          entry->primitive = std::make_unique<dnnl::lbr_gru_forward>(pd);
        } else {
          dnnl::gru_forward::desc desc(prop, direction(), src_layer, state, any_layer, any_iter,
                                       bias, dst_layer, state);
          dnnl::gru_forward::primitive_desc pd(desc, attr, engine_);
          weights_layer_desc = pd.weights_layer_desc();
          weights_iter_desc = pd.weights_iter_desc();
          entry->scratchpad_desc = pd.scratchpad_desc();
          entry->primitive = std::make_unique<dnnl::gru_forward>(pd);
        }
        break;
      case CellKind::kLstm: {
        dnnl::lstm_forward::desc desc(prop, direction(), src_layer, state, state, any_layer,
                                      any_iter, bias, dst_layer, state, state);
        dnnl::lstm_forward::primitive_desc pd(desc, attr, engine_);
        weights_layer_desc = pd.weights_layer_desc();
        weights_iter_desc = pd.weights_iter_desc();
        entry->scratchpad_desc = pd.scratchpad_desc();
        entry->primitive = std::make_unique<dnnl::lstm_forward>(pd);
        break;
      }
    }
    // The plain ldigo weights in whatever layout the primitive chose, shared by every shape.
    auto plain = [&](const std::vector<float>& values, memory::dims dims) {
      return memory({dims, dt::f32, tag::ldigo}, engine_, const_cast<float*>(values.data()));
    };
    entry->weights_layer = weights_layer_layouts_.get(
        weights_layer_desc,
        plain(weights_layer_, {1, dirs, spec_.input_size, spec_.gates, hidden}));
    entry->weights_iter = weights_iter_layouts_.get(
        weights_iter_desc, plain(weights_iter_, {1, dirs, hidden, spec_.gates, hidden}));
    cache_[key] = entry;
    return entry;
  }

  // Copies [D, B, H] (layout 0) or [B, D, H] (layout 1) to/from oneDNN's dense ldnc.
  void copy_state(const RecurrentIo& io, const float* from, float* to, bool to_onednn) const {
    const LayoutStrides strides = layout_strides(spec_, io);
    const std::size_t bytes = static_cast<std::size_t>(spec_.hidden_size) * sizeof(float);
    for (int d = 0; d < spec_.num_directions; ++d) {
      for (std::int64_t b = 0; b < io.batch; ++b) {
        const std::int64_t dense = (d * io.batch + b) * spec_.hidden_size;
        const std::int64_t onnx = strides.state_offset(d, b);
        std::memcpy(to + (to_onednn ? dense : onnx), from + (to_onednn ? onnx : dense), bytes);
      }
    }
  }

  Status execute(const RecurrentIo& io, KernelContext& context) const {
    std::shared_ptr<ShapeEntry> entry = entry_for(io.seq_length, io.batch);
    const std::int64_t hidden = spec_.hidden_size, dirs = spec_.num_directions;
    const std::size_t state_floats = static_cast<std::size_t>(dirs * io.batch * hidden);
    const memory::desc src_layer_desc({io.seq_length, io.batch, spec_.input_size}, dt::f32,
                                      spec_.layout == 0 ? tag::tnc : tag::ntc);
    const memory::desc dst_layer_desc({io.seq_length, io.batch, dirs * hidden}, dt::f32, tag::tnc);
    const memory::desc state_desc(state_dims(io.batch), dt::f32, tag::ldnc);

    // Y can take oneDNN's dst_layer directly for one direction in either layout's tnc/ntc sense
    // only when layout 0; otherwise go through a scratch buffer.
    const bool y_direct = io.y && dirs == 1 && spec_.layout == 0;
    std::vector<float> dst_scratch;
    float* dst_ptr = y_direct ? io.y->data<float>() : nullptr;
    if (!dst_ptr) {
      dst_scratch.resize(static_cast<std::size_t>(io.seq_length * io.batch * dirs * hidden));
      dst_ptr = dst_scratch.data();
    }
    std::vector<float> h_in(state_floats, 0.0f), c_in(state_floats, 0.0f);
    std::vector<float> h_out(state_floats), c_out(state_floats);
    if (io.initial_h) copy_state(io, io.initial_h->data<float>(), h_in.data(), true);
    if (io.initial_c) copy_state(io, io.initial_c->data<float>(), c_in.data(), true);
    auto bias_mem = memory({{1, dirs, bias_gates_, hidden}, dt::f32, tag::ldgo}, engine_,
                           const_cast<float*>(bias_.data()));
    std::vector<std::uint8_t> scratchpad(entry->scratchpad_desc.get_size());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC_LAYER,
         memory(src_layer_desc, engine_, const_cast<float*>(io.x->data<float>()))},
        {DNNL_ARG_SRC_ITER, memory(state_desc, engine_, h_in.data())},
        {DNNL_ARG_WEIGHTS_LAYER, entry->weights_layer},
        {DNNL_ARG_WEIGHTS_ITER, entry->weights_iter},
        {DNNL_ARG_BIAS, bias_mem},
        {DNNL_ARG_DST_LAYER, memory(dst_layer_desc, engine_, dst_ptr)},
        {DNNL_ARG_DST_ITER, memory(state_desc, engine_, h_out.data())},
        {DNNL_ARG_SCRATCHPAD, memory(entry->scratchpad_desc, engine_, scratchpad.data())},
    };
    if (spec_.cell == CellKind::kLstm) {
      args.insert({DNNL_ARG_SRC_ITER_C, memory(state_desc, engine_, c_in.data())});
      args.insert({DNNL_ARG_DST_ITER_C, memory(state_desc, engine_, c_out.data())});
    }
    set_openmp_threads(1);
    dnnl::stream stream(engine_);
    entry->primitive->execute(stream, args);
    stream.wait();

    if (io.y && !y_direct) {
      const LayoutStrides strides = layout_strides(spec_, io);
      const std::size_t bytes = static_cast<std::size_t>(hidden) * sizeof(float);
      for (std::int64_t t = 0; t < io.seq_length; ++t) {
        for (std::int64_t b = 0; b < io.batch; ++b) {
          for (int d = 0; d < dirs; ++d) {
            std::memcpy(io.y->data<float>() + strides.y_offset(t, d, b),
                        dst_ptr + ((t * io.batch + b) * dirs + d) * hidden, bytes);
          }
        }
      }
    }
    if (io.y_h) copy_state(io, h_out.data(), io.y_h->data<float>(), false);
    if (io.y_c) copy_state(io, c_out.data(), io.y_c->data<float>(), false);
    return Status::ok();
  }

  static constexpr std::size_t kMaxCachedShapes = 16;
  RecurrentSpec spec_;
  std::unique_ptr<Kernel> ragged_fallback_;
  dnnl::engine engine_;
  std::vector<float> weights_layer_, weights_iter_, bias_;
  std::int64_t bias_gates_ = 0;
  mutable std::mutex cache_mutex_;
  mutable std::map<std::pair<std::int64_t, std::int64_t>, std::shared_ptr<ShapeEntry>> cache_;
  // W and R in each layout a shape's primitive has asked for (guarded by cache_mutex_).
  mutable dense::ReorderedWeights weights_layer_layouts_, weights_iter_layouts_;
};

bool constant_or_absent(const ir::Node& node, std::size_t index) {
  const ir::Value* value = node.input(index);
  return !value || value->is_constant();
}

}  // namespace

bool onednn_can_run(const ir::Node& node, const RecurrentSpec& spec) {
  if (spec.has_clip || spec.input_forget) return false;
  if (spec.cell == CellKind::kLstm && node.input(7)) return false;  // peepholes
  if (!constant_or_absent(node, 1) || !constant_or_absent(node, 2) ||
      !constant_or_absent(node, 3)) {
    return false;
  }
  if (spec.cell == CellKind::kRnn) {
    // vanilla_rnn takes one activation for every direction: Tanh, Relu or Sigmoid.
    const ActivationKind first = spec.activation(0, 0).kind;
    for (int d = 0; d < spec.num_directions; ++d) {
      if (spec.activation(d, 0).kind != first) return false;
    }
    return first == ActivationKind::kTanh || first == ActivationKind::kRelu ||
           first == ActivationKind::kSigmoid;
  }
  return spec.has_default_activations();
}

Expected<std::unique_ptr<Kernel>> make_onednn_kernel(const ir::Node& node,
                                                     const RecurrentSpec& spec) {
  VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> fallback, make_blas_kernel(node, spec));
  const ir::Value* b = node.input(3);
  try {
    return std::unique_ptr<Kernel>(
        std::make_unique<OnednnKernel>(spec, std::move(fallback), *node.input(1)->constant,
                                       *node.input(2)->constant, b ? &*b->constant : nullptr));
  } catch (const dnnl::error& e) {
    return internal_error(node.describe(), ": oneDNN could not create the engine: ", e.what());
  }
}

}  // namespace voxrt::backends::cpu::recurrent
