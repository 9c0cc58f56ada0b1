// Untrusted JSON from clients (docs/security.md): bounded before it is parsed, and bounded when
// it is echoed back in an error. nlohmann::json parses iteratively but serialises and compares
// recursively, so a 200 KB text frame nested 100,000 deep used to overflow the stack of the
// network thread while the error message was being built, killing every stream of the server.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "voxrt/status.h"

namespace voxrt::server {

// Deepest nesting of arrays and objects a client message may have. The protocol needs 3
// ({"config": {"phrase_list": [...]}}); the margin is for clients that send extra keys.
inline constexpr int kMaxClientJsonDepth = 16;
// Longest rendering of a client value inside an error message.
inline constexpr std::size_t kMaxEchoedValueBytes = 64;

// Parses `text` as one JSON value of at most `max_depth` nested arrays/objects. The depth is
// checked by a linear scan before any parsing, so a hostile depth costs O(size) and no
// recursion. Errors say which limit was hit and at which byte.
Expected<nlohmann::json> parse_client_json(std::string_view text,
                                           int max_depth = kMaxClientJsonDepth);

// `value` rendered for an error message: its JSON text cut to `max_bytes` (with "..." when cut).
// Safe for any value parse_client_json returned.
std::string describe_client_value(const nlohmann::json& value,
                                  std::size_t max_bytes = kMaxEchoedValueBytes);

}  // namespace voxrt::server
