// A Transpose that swaps only the last two dims and feeds MatMul / FusedMatMul / Gemm becomes the
// consumer's trans_a / trans_b (MatMul turns into FusedMatMul); a constant operand is transposed
// at build time instead, so the kernel reads it in the order it wants.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_fold_transpose_into_gemm_pass();

}  // namespace voxrt::ir
