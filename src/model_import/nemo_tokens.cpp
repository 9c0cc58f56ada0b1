#include "model_import/nemo_tokens.h"

#include <filesystem>

namespace voxrt::model_import {

Expected<NemoTokens> read_nemo_tokens(const std::string& dir) {
  NemoTokens tokens;
  tokens.file = (std::filesystem::path(dir) / "tokens.txt").string();
  if (!std::filesystem::exists(tokens.file)) {
    return not_found(dir, ": no tokens.txt (sherpa-onnx's NeMo export writes the tokenizer's ",
                     "pieces as '<piece> <id>' lines, <blk> last)");
  }
  VOXRT_ASSIGN_OR_RETURN(tokens.pieces, read_tokens_txt(tokens.file));
  if (tokens.pieces.empty() || tokens.pieces.back() != "<blk>") {
    return invalid_argument(tokens.file, ": the last token is '",
                            tokens.pieces.empty() ? "" : tokens.pieces.back(),
                            "', expected <blk> (NeMo's blank is the last class)");
  }
  return tokens;
}

}  // namespace voxrt::model_import
