#include "backends/cpu/cpu_backend.h"

namespace voxrt::backends::cpu {

std::vector<TacticInfo> reduction_tactics(const ir::Node& node) { return {}; }

Expected<std::unique_ptr<Kernel>> make_reduction_kernel(const ir::Node& node, TacticId tactic) {
  return unsupported(node.describe(), ": no CPU kernel yet");
}

}  // namespace voxrt::backends::cpu
