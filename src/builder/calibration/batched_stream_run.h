// Runs calibration streams as one batch: the sensitivity pass runs the same few streams once
// for the FP32 reference and once per INT8 candidate (83 runs for the default model), and
// batch-1 runs of a 32-frame chunk are small GEMMs that re-read every weight once per stream.
// Here the streams that are at the same chunk and whose chunks have the same dims run together,
// each stream its own rows of the batch axis, its states gathered into the batch before the run
// and scattered back after it. Each stream's outputs are those of its batch-1 runs as long as
// every kernel computes a batch row from that row alone
// (tests/unit/calibration/batched_sensitivity_test.cpp compares the two on a small model; the
// sensitivity pass checks it on its FP32 reference run and falls back where it does not hold).
#pragma once

#include <vector>

#include "builder/calibration/calibration_run.h"

namespace voxrt::builder::calibration {

// The chunks of each stream, in stream order.
using StreamChunks = std::vector<std::vector<CalibrationChunk>>;

// The chunks of the source's first `count` streams, each read (and put through the front end)
// once, so the many runs of the sensitivity pass do not repeat that work.
Expected<StreamChunks> read_streams(CalibrationSource& source, int count);

// Runs `plan` (compiled from `graph`) over `streams` on one thread, batching as the header
// says. `options.max_streams` and `options.observer` are not used (every stream runs; an
// observer would see batches, not streams). `on_outputs` is called once per stream and chunk,
// chunk by chunk with the streams of a batch in stream order. A graph whose inputs or outputs
// do not all carry the batch symbol (axis 0 of its first input that is not a state) on exactly
// one axis runs one stream at a time, as run_calibration_streams does. Returns how many times
// it ran the plan.
Expected<int> run_calibration_streams_batched(const ir::Graph& graph, const runtime::Plan& plan,
                                              const BuilderConfig& config,
                                              const StreamChunks& streams,
                                              const StreamRunOptions& options);

}  // namespace voxrt::builder::calibration
