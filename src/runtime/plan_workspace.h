// What one caller of a Plan keeps from one run to the next (one per ExecutionContext; never
// shared between threads). A streaming caller runs the same small graph with the same shapes
// every 20-30 ms, and at that size the per-node bookkeeping costs as much as the arithmetic
// (Silero VAD: ~25 % of a run in malloc/free and ~20 % in shape inference before this existed).
// So each step remembers
//  - the dtypes and dims of its inputs at recent runs (up to kMaxShapeSignatures of them) and
//    the output dims they gave, when the output dims depend on input shapes only (then input
//    shapes seen before skip shape inference);
//  - its output buffers once every reader is done with them (then the next run writes into the
//    same bytes instead of allocating).
// A buffer is kept only when nothing else holds it (a graph output handed to the caller, a view,
// an observer's copy), so a reused buffer never aliases anything the caller can see.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "voxrt/tensor.h"

namespace voxrt::runtime {

struct PlanWorkspace;

// How a step's output dims are found on a run.
enum class OutputShapeSource : unsigned char {
  kNotYetKnown,  // not classified yet (first run)
  kInputShapes,  // from input dtypes and dims alone: memoized per input signature
  kInputValues,  // shape inference needs input values (Reshape to a computed shape, Range, ...)
};

// Input dtypes and dims of one run of a step and the output dtypes and dims they gave.
struct ShapeSignature {
  std::vector<bool> input_present;   // per node input
  std::vector<DType> input_dtypes;   // per node input (kF32 for an omitted one)
  std::vector<Dims> input_dims;      // per node input (empty for an omitted one)
  std::vector<DType> output_dtypes;  // per node output
  std::vector<Dims> output_dims;     // per node output
};

// A server batches however many streams are ready, so one step sees a few input shapes in
// turn; this many are remembered per step (the oldest is replaced).
inline constexpr std::size_t kMaxShapeSignatures = 8;

struct StepMemo {
  OutputShapeSource shape_source = OutputShapeSource::kNotYetKnown;
  // kInputShapes: up to kMaxShapeSignatures of them; otherwise at most one, this run's.
  std::vector<ShapeSignature> signatures;
  std::size_t current = 0;            // the signature of this run
  std::size_t next_replaced = 0;      // the one a new signature replaces when all are taken
  std::vector<Tensor> spare_outputs;  // per node output: a buffer to write into, or invalid
  std::vector<const Tensor*> inputs;  // scratch for the kernel call
  std::vector<Tensor*> outputs;       // scratch for the kernel call
  // If nodes: the branches' own workspaces, made at their first run.
  std::unique_ptr<PlanWorkspace> then_branch, else_branch;
};

struct PlanWorkspace {
  const void* bound_plan = nullptr;  // the Plan this workspace was sized for
  std::vector<Tensor> slots;         // value slots; constants stay filled between runs
  std::vector<StepMemo> steps;       // per plan step
};

// Output buffers larger than this are not kept between runs: their allocation is small next to
// the work that fills them, and keeping every intermediate of a long utterance alive would
// trade peak memory (liveness-planned) for nothing.
inline constexpr std::size_t kMaxReusedOutputBytes = std::size_t{4} << 20;

}  // namespace voxrt::runtime
