// Recognizes scaled dot-product attention as exporters write it and replaces it with one Attention
// node (semantics in ir/op_kind.h). Around a Softmax over the last axis whose only reader is
// MatMul(P, V), the scores are walked back to MatMul(Q, K^T) (or FusedMatMul with trans_b)
// through:
//   Reshape (the heads folded into the batch and back, as Hugging Face writes it),
//   Mul / Div by a scalar constant (the scale, before or after the additive terms),
//   Add of any tensor (an additive mask, a relative-position bias such as Conformer's and
//     Zipformer's rel_shift(matrix_bd), a causal mask built in the graph with Trilu, Range,
//     Where or torch's baddbmm),
//   a last Where(mask, scores, fill) or Where(mask, fill, scores) with a scalar fill (masked_fill).
// K^T may be a Transpose of K (any permutation whose last two axes swap back), or anything
// else (then a Transpose is inserted). Rank-4 products ([B, H, S, D]) are used as they are;
// rank-3 ones ([B*H, S, D]) are lifted to rank 4 through the Reshapes that folded the heads when
// their dims say so, and otherwise run as one batch of B*H heads. Every intermediate value must
// have no other reader. Terms and the scale are normalized to the op's
// s = scale * Q K^T + bias (+ mask), inserting Mul / Add / Not nodes where the graph's order
// differs; the replaced nodes are listed in the Attention node's origin.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_recognize_attention_pass();

}  // namespace voxrt::ir
