// tokens.txt as sherpa-onnx's NeMo export scripts write it beside every NeMo model they export
// (CTC and transducer, offline and cache-aware): the tokenizer's pieces as '<piece> <id>' lines
// and the blank, <blk>, last (NeMo's blank id is the vocabulary size).
#pragma once

#include <string>
#include <vector>

#include "model_import/import_support.h"

namespace voxrt::model_import {

struct NemoTokens {
  std::string file;                 // DIR/tokens.txt
  std::vector<std::string> pieces;  // by id, <blk> last
};

// Errors name the folder or file and say what was expected and found.
Expected<NemoTokens> read_nemo_tokens(const std::string& dir);

}  // namespace voxrt::model_import
