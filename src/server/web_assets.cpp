#include "server/web_assets.h"

namespace voxrt::server {

const WebAsset* find_web_asset(std::string_view target) {
  if (target == "/") target = "/index.html";
  for (const WebAsset& asset : web_assets()) {
    if (asset.path == target) return &asset;
  }
  return nullptr;
}

}  // namespace voxrt::server
