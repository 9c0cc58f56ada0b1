#!/usr/bin/env bash
# cmake --install into a scratch prefix (issue 31): the documented layout (docs/install.md) is
# there, the installed voxrt runs from it (build, transcribe), and a separate CMake project finds
# the library with find_package(voxrt) and loads an engine through the public C++ API.
set -euo pipefail
trap 'echo "FAIL: the command on line $LINENO failed"' ERR
build=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --component runtime > "$work/install.log"
found=$(cd "$prefix" && find . -name libvoxrt.so | head -1)
[ -n "$found" ] || { cat "$work/install.log"; echo "FAIL: no libvoxrt.so installed"; exit 1; }
libdir=$(dirname "${found#./}")
for f in bin/voxrt "$libdir/libvoxrt.so" include/voxrt/engine.h include/voxrt/builder.h \
         "$libdir/cmake/voxrt/voxrtConfig.cmake" "$libdir/cmake/voxrt/voxrtConfigVersion.cmake" \
         "$libdir/cmake/voxrt/voxrtTargets.cmake" share/voxrt/models/default/model.onnx \
         share/voxrt/models/default/model.metadata.txt share/voxrt/samples/play_music.wav; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f is not installed"; exit 1; }
done
echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"
if ldd "$prefix/bin/voxrt" | grep -q "$build"; then
  echo "FAIL: the installed voxrt still loads libraries from the build folder:"
  ldd "$prefix/bin/voxrt" | grep "$build"
  exit 1
fi
"$prefix/bin/voxrt" --version
"$prefix/bin/voxrt" build --onnx "$prefix/share/voxrt/models/default/model.onnx" \
  --engine "$work/default.engine" --no-autotune > /dev/null 2>&1
text=$("$prefix/bin/voxrt" transcribe --engine "$work/default.engine" \
  "$prefix/share/voxrt/samples/play_music.wav" 2>/dev/null)
echo "installed voxrt: $text"
grep -q "play some music" <<<"$text" || { echo "FAIL: transcript"; exit 1; }

# A program of its own, built against the installed package.
mkdir "$work/consumer"
cat > "$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(voxrt 0.1 REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE voxrt::voxrt)
CMAKE
cat > "$work/consumer/main.cpp" <<'CPP'
#include <iostream>

#include "voxrt/engine.h"

int main(int argc, char** argv) {
  auto engine = voxrt::Engine::load_file(argv[1]);
  if (!engine) {
    std::cerr << engine.status().message() << "\n";
    return 1;
  }
  for (const auto& input : (*engine)->inputs()) std::cout << "input " << input.name << "\n";
  return 0;
}
CPP
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/consumer.log" 2>&1 &&
  cmake --build "$work/consumer/build" >> "$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; echo "FAIL: the consumer project"; exit 1; }
"$work/consumer/build/consumer" "$work/default.engine" | tee "$work/consumer.out"
grep -q "input features" "$work/consumer.out" || { echo "FAIL: consumer output"; exit 1; }
echo PASS
