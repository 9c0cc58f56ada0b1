#include "server/client_json.h"

namespace voxrt::server {

Expected<nlohmann::json> parse_client_json(std::string_view text, int max_depth) {
  // Brackets inside strings do not nest; escapes inside strings hide quotes. Whatever else is
  // malformed is left to the parser, which reports it.
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return invalid_argument("text frame nests arrays/objects deeper than ", max_depth,
                                " levels (at byte ", i, ")");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  nlohmann::json value =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return invalid_argument("text frame is not valid JSON");
  return value;
}

std::string describe_client_value(const nlohmann::json& value, std::size_t max_bytes) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() <= max_bytes) return text;
  // Cut on a UTF-8 boundary so the error reply stays valid UTF-8.
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "...";
}

}  // namespace voxrt::server
