// What every backend provides: which tactics can run a node, and kernels that run it. The
// partitioner and builder ask only these questions (STYLE.md 4).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt {
class ThreadPool;
}

namespace voxrt::backends {

// Tactic ids are per op family and stored in engine files: append only. Tactic 0 of every
// family is the naive reference kernel, kept forever as the test oracle.
using TacticId = std::uint32_t;
inline constexpr TacticId kReferenceTactic = 0;

struct TacticInfo {
  TacticId id = kReferenceTactic;
  std::string name;  // "reference", "onednn", "openblas", ...
  // The kernel packs its constant weights once, when it is made: the choice for plans that run
  // untuned at batch 1 (INT8 calibration), where a GEMM that repacks its weights every call
  // spends most of its time copying them.
  bool prepacks_constant_weights = false;
};

struct KernelContext {
  // Never null; threads() == 1 means run inline.
  ThreadPool* pool = nullptr;
};

// Prepared for one node (weights may be repacked at creation); const and stateless afterwards,
// so one kernel serves every ExecutionContext of an engine at once (STYLE.md 9).
class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs[i] is null for an omitted optional input; outputs are allocated by the caller with the
  // dtypes and dims that shape inference gave, and null for omitted optional outputs.
  virtual Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
                     KernelContext& context) const = 0;
};

}  // namespace voxrt::backends
