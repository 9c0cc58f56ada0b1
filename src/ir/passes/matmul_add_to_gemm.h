// MatMul(A, constant W) + Add(constant bias of shape [N] or [1, ..., 1, N]) -> FusedMatMul with
// bias (the Gemm of a Linear layer, for any rank of A). A FusedMatMul without bias and activation
// takes the Add the same way.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_matmul_add_to_gemm_pass();

}  // namespace voxrt::ir
