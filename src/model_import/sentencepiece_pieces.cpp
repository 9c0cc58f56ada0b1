#include "model_import/sentencepiece_pieces.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string_view>

namespace voxrt::model_import {
namespace {

// A protobuf message's fields, one at a time (wire types 0 varint, 1 fixed64, 2 length-delimited,
// 5 fixed32; the groups of wire types 3 and 4 are not used by ModelProto).
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }
  std::size_t offset() const { return at_; }

  bool varint(std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && at_ < bytes_.size(); shift += 7) {
      const auto byte = static_cast<std::uint8_t>(bytes_[at_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  // The next field's number and wire type; for wire type 2 also its bytes, else skips the value
  // (leaving a varint in `number_value`).
  bool next(int& field, int& wire_type, std::string_view& payload, std::uint64_t& number_value) {
    std::uint64_t key = 0;
    if (!varint(key)) return false;
    field = static_cast<int>(key >> 3);
    wire_type = static_cast<int>(key & 7);
    switch (wire_type) {
      case 0: return varint(number_value);
      case 1: return skip(8);
      case 5: return skip(4);
      case 2: {
        std::uint64_t length = 0;
        if (!varint(length) || length > bytes_.size() - at_) return false;
        payload = bytes_.substr(at_, length);
        at_ += length;
        return true;
      }
      default: return false;
    }
  }

 private:
  bool skip(std::size_t n) {
    if (n > bytes_.size() - at_) return false;
    at_ += n;
    return true;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

}  // namespace

Expected<std::vector<SentencePiece>> read_sentencepiece_pieces(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path, ": cannot open the SentencePiece model");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_sentencepiece_pieces(buffer.str(), path);
}

Expected<std::vector<SentencePiece>> parse_sentencepiece_pieces(std::string_view bytes,
                                                                const std::string& path) {
  std::vector<SentencePiece> pieces;
  WireReader model(bytes);
  while (!model.done()) {
    int field = 0, wire = 0;
    std::string_view payload;
    std::uint64_t number = 0;
    const std::size_t at = model.offset();
    if (!model.next(field, wire, payload, number)) {
      return invalid_argument(path, ": not a SentencePiece model (protobuf ModelProto): bad field ",
                              "at byte ", at);
    }
    if (field != 1 || wire != 2) continue;  // ModelProto.pieces = 1
    SentencePiece piece;
    WireReader message(payload);
    while (!message.done()) {
      int f = 0, w = 0;
      std::string_view text;
      std::uint64_t value = 0;
      if (!message.next(f, w, text, value)) {
        return invalid_argument(path, ": piece ", pieces.size(), " at byte ", at,
                                " is not a SentencePiece message");
      }
      if (f == 1 && w == 2) piece.piece = std::string(text);
      if (f == 3 && w == 0) piece.type = static_cast<int>(value);
    }
    pieces.push_back(std::move(piece));
  }
  if (pieces.empty()) return invalid_argument(path, ": a SentencePiece model without pieces");
  return pieces;
}

}  // namespace voxrt::model_import
