// The live page served at `/` (web/, docs/web.md), compiled into the binary by
// cmake/web_assets_to_cpp.cmake: no files to install and nothing fetched from another host.
#pragma once

#include <span>
#include <string_view>

namespace voxrt::server {

struct WebAsset {
  std::string_view path;  // "/index.html", "/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

// Every embedded file (generated).
std::span<const WebAsset> web_assets();
// The asset for a request target without its query ("/" is "/index.html"); null if none.
const WebAsset* find_web_asset(std::string_view target);

}  // namespace voxrt::server
