// Writes small real engines (built from ONNX node-test models) as the engine_loader_fuzz seed
// corpus, at build time, so nothing binary is committed.
//   make_engine_seeds OUT_DIR MODEL.onnx...
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "voxrt/builder.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_engine_seeds OUT_DIR MODEL.onnx...\n");
    return 2;
  }
  const std::filesystem::path out_dir = argv[1];
  std::filesystem::create_directories(out_dir);
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path model = argv[i];
    voxrt::BuilderConfig config;
    config.autotune = false;
    auto engine = voxrt::build_engine_from_onnx_file(model.string(), config);
    if (!engine) {
      std::fprintf(stderr, "make_engine_seeds: skipping %s: %s\n", model.c_str(),
                   engine.status().message().c_str());
      continue;
    }
    const auto path = out_dir / (model.parent_path().filename().string() + ".engine");
    std::ofstream(path, std::ios::binary) << *engine;
    ++written;
  }
  std::printf("make_engine_seeds: %d engine(s) in %s\n", written, out_dir.c_str());
  return written > 0 ? 0 : 1;
}
