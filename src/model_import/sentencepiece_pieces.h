// The pieces of a SentencePiece model file (its ModelProto), read without libsentencepiece:
// Debian 12's libsentencepiece aborts a process that also links libprotobuf 3.21 when it loads a
// model (docs/model_contract.md, voxrt.unit), so importers read the few fields they need from
// the protobuf wire format themselves.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::model_import {

struct SentencePiece {
  std::string piece;
  // ModelProto.SentencePiece.Type: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused,
  // 6 byte.
  int type = 1;
};

// ModelProto.pieces in id order; errors name the file and the byte offset that is not protobuf.
Expected<std::vector<SentencePiece>> read_sentencepiece_pieces(const std::string& path);
// The same from the file's bytes (`path` only names it in errors); fuzzed
// (fuzz/sentencepiece_fuzz.cpp).
Expected<std::vector<SentencePiece>> parse_sentencepiece_pieces(std::string_view bytes,
                                                                const std::string& path);

}  // namespace voxrt::model_import
