# cmake -DDIR=web -DOUT=web_assets_data.cpp -P web_assets_to_cpp.cmake
# Writes every file of DIR as a byte array and the table server/web_assets.h declares, so the
# live page is part of the voxrt binary (nothing to install, nothing fetched from elsewhere).
file(GLOB files LIST_DIRECTORIES false RELATIVE ${DIR} ${DIR}/*)
list(SORT files)
set(arrays "")
set(table "")
set(index 0)
foreach(name ${files})
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(name MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  elseif(name MATCHES "\\.svg$")
    set(type "image/svg+xml")
  elseif(name MATCHES "\\.png$")
    set(type "image/png")
  else()
    continue()  # README.md, CMake files: not served
  endif()
  file(READ ${DIR}/${name} hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # A trailing 0 keeps an empty file's array legal; the size excludes it.
  string(APPEND arrays "const unsigned char asset_${index}[] = {${bytes}0};\n")
  string(APPEND table "      {\"/${name}\", \"${type}\", {reinterpret_cast<const char*>(asset_${index}), ${size}}},\n")
  math(EXPR index "${index} + 1")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from web/ by cmake/web_assets_to_cpp.cmake; do not edit.
#include \"server/web_assets.h\"

namespace voxrt::server {
namespace {
${arrays}}  // namespace

std::span<const WebAsset> web_assets() {
  static const WebAsset assets[] = {
${table}  };
  return assets;
}

}  // namespace voxrt::server
")
# Only a changed table recompiles.
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
