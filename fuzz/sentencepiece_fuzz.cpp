// libFuzzer target: arbitrary bytes as a SentencePiece model file (the protobuf wire-format
// reader that `voxrt build --model-dir` uses on torchaudio Emformer exports instead of
// libsentencepiece). Bad input must give an error, never a crash or a read past the bytes; what
// parses has at least one piece, each within the input's size.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model_import/sentencepiece_pieces.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto pieces = voxrt::model_import::parse_sentencepiece_pieces(bytes, "fuzz.model");
  if (!pieces) return 0;
  if (pieces->empty()) __builtin_trap();
  for (const auto& piece : *pieces)
    if (piece.piece.size() > size) __builtin_trap();
  return 0;
}
