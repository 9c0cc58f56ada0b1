#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "backends/cpu/cpu_backend.h"

namespace voxrt::backends::cpu {

std::vector<TacticInfo> tactics_for(const ir::Node& node) {
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kElementwise: return elementwise_tactics(node);
    case ir::OpFamily::kReduction: return reduction_tactics(node);
    case ir::OpFamily::kDataMovement: return data_movement_tactics(node);
    case ir::OpFamily::kPooling: return pooling_tactics(node);
    case ir::OpFamily::kDense: return dense_tactics(node);
    case ir::OpFamily::kRecurrent: return recurrent_tactics(node);
    case ir::OpFamily::kControlFlow: return {};  // If is run by the runtime itself
    case ir::OpFamily::kAttention: return attention_tactics(node);
  }
  return {};
}

bool supports(const ir::Node& node) {
  return node.op == ir::OpKind::kIf || !tactics_for(node).empty();
}

bool supports_fp16(const ir::Node& node) {
  return ir::op_family(node.op) == ir::OpFamily::kRecurrent && recurrent_fp16_available(node);
}

Expected<std::unique_ptr<Kernel>> create_kernel(const ir::Node& node, TacticId tactic) {
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kElementwise: return make_elementwise_kernel(node, tactic);
    case ir::OpFamily::kReduction: return make_reduction_kernel(node, tactic);
    case ir::OpFamily::kDataMovement: return make_data_movement_kernel(node, tactic);
    case ir::OpFamily::kPooling: return make_pooling_kernel(node, tactic);
    case ir::OpFamily::kDense: return make_dense_kernel(node, tactic);
    case ir::OpFamily::kRecurrent: return make_recurrent_kernel(node, tactic);
    case ir::OpFamily::kAttention: return make_attention_kernel(node, tactic);
    case ir::OpFamily::kControlFlow: break;
  }
  return unsupported(node.describe(), ": the CPU backend has no kernel for this op");
}

std::string scratch_note(const ir::Node& node, TacticId tactic, std::span<const Dims> input_dims) {
  return ir::op_family(node.op) == ir::OpFamily::kAttention
             ? attention_scratch_note(node, tactic, input_dims)
             : std::string();
}

std::int64_t last_level_cache_bytes() {
  static const std::int64_t bytes = [] {
    std::int64_t largest = 0;
    for (int index = 0; index < 8; ++index) {
      std::ifstream size(str_cat("/sys/devices/system/cpu/cpu0/cache/index", index, "/size"));
      std::string text;
      if (!(size >> text) || text.empty()) continue;
      std::int64_t value = std::atoll(text.c_str());
      if (text.back() == 'K') value <<= 10;
      if (text.back() == 'M') value <<= 20;
      largest = std::max(largest, value);
    }
    return largest > 0 ? largest : std::int64_t{32} << 20;
  }();
  return bytes;
}

std::int64_t weight_cache_bytes() {
  return std::min(last_level_cache_bytes(), std::int64_t{32} << 20);
}

bool cpu_has_avx2_fma() {
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available;
}

bool cpu_has_avx512f() {
  static const bool available = [] {
    const char* allowed = std::getenv("VOXRT_CPU_AVX512");
    if (allowed && allowed[0] == '0') return false;
    return cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f");
  }();
  return available;
}

std::string cpu_fingerprint() {
  // The model name and the ISA flags that kernels dispatch on; an engine built for one CPU may
  // pick tactics that are slow or illegal on another.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(cpuinfo, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 2);
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line.substr(line.find(':') + 2);
  }
  std::string isa;
  for (const char* f :
       {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile"}) {
    if ((" " + flags + " ").find(std::string(" ") + f + " ") != std::string::npos) {
      isa += isa.empty() ? "" : ",";
      isa += f;
    }
  }
  return str_cat("x86_64 [", isa, "] ", model);
}

}  // namespace voxrt::backends::cpu
