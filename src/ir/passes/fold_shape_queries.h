// Folds what PyTorch's shape code asks of a tensor whose shape is only partly known, so that a
// model exported with a dynamic batch still compiles to constant slices and reshapes when its
// other dims are fixed by the profile (the CUDA backend runs no shape arithmetic on the device):
//  - Gather(Shape(x), constant indices) becomes a constant when the dims it picks are known,
//    even if others (the batch) are not; the arithmetic on it then folds as usual.
//  - Reshape(data, Concat(1-element pieces)) whose pieces are all constant but one gets that
//    piece replaced by -1 (Reshape infers it from the element count), so its shape is constant.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_fold_shape_queries_pass();

}  // namespace voxrt::ir
