// Shared by the test programs that group error messages by kind (the ONNX node conformance run
// and the node-model import test).
#pragma once

#include <string>

namespace voxrt::test {

// Every 'quoted name' replaced by '.', so messages that differ only in names group together.
inline std::string without_quoted_names(const std::string& text) {
  std::string result;
  bool inside_quotes = false;
  for (char c : text) {
    if (c == '\'') {
      if (!inside_quotes) result += "'.'";
      inside_quotes = !inside_quotes;
    } else if (!inside_quotes) {
      result += c;
    }
  }
  return result;
}

}  // namespace voxrt::test
