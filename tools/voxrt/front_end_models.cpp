#include "front_end_models.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/engine_format.h"
#include "voxrt/engine.h"

namespace voxrt::cli {
namespace fs = std::filesystem;
namespace {

std::uint64_t fnv1a(const std::string& bytes, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool is_onnx(const fs::path& p) {
  return p.extension() == ".onnx";
}

// The first of `stem`.onnx / `stem`.engine in `dir`, or "".
std::string beside(const fs::path& dir, const std::string& stem) {
  for (const char* ext : {".onnx", ".engine"}) {
    const fs::path p = dir / (stem + ext);
    if (fs::exists(p)) return p.string();
  }
  return "";
}

}  // namespace

std::string engine_cache_dir() {
  if (const char* d = std::getenv("VOXRT_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (fs::path(d) / "voxrt").string();
  if (const char* d = std::getenv("HOME"); d && *d)
    return (fs::path(d) / ".cache" / "voxrt").string();
  return (fs::temp_directory_path() / "voxrt-cache").string();
}

Expected<std::string> engine_for_model(const std::string& path, const BuilderConfig& config,
                                       const std::string& config_tag) {
  if (!fs::exists(path)) return not_found(path, ": no such model or engine file");
  if (!is_onnx(path)) return path;
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in) return invalid_argument(path, ": cannot read");
  const std::uint64_t key = fnv1a(config_tag + "|" + runtime::kBuilderVersion + "|" + bytes.str());
  std::ostringstream name;
  name << fs::path(path).stem().string() << "-" << std::hex << key << ".engine";
  const fs::path dir = engine_cache_dir();
  const fs::path cached = dir / name.str();
  if (fs::exists(cached) && Engine::load_file(cached.string())) return cached.string();
  std::cerr << "[voxrt] building " << path << " into " << cached << " (once)\n";
  VOXRT_ASSIGN_OR_RETURN(std::string engine, build_engine_from_onnx_file(path, config));
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path temporary = cached.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(engine.data(), static_cast<std::streamsize>(engine.size()));
    if (!out) return invalid_argument("cannot write the engine cache file ", temporary.string());
  }
  fs::rename(temporary, cached, ec);  // atomic: concurrent builders leave one complete file
  if (ec) return invalid_argument("cannot write the engine cache file ", cached.string());
  return cached.string();
}

Expected<std::string> silero_vad_engine(const std::string& path) {
  BuilderConfig config;
  config.fixed_inputs["sr"] = Tensor::scalar_i64(16000);
  OptimizationProfile profile{"silero", {}};
  profile.inputs["input"] = ShapeRange{{1, 576}, {8, 576}, {32, 576}};
  profile.inputs["state"] = ShapeRange{{2, 1, 128}, {2, 8, 128}, {2, 32, 128}};
  config.profiles.push_back(profile);
  return engine_for_model(path, config, "silero sr=16000 input 1..32x576 state 2x1..32x128");
}

Expected<stream::WakeWordConfig> wake_word_engines(const std::string& head_or_dir,
                                                   const std::string& mel,
                                                   const std::string& embedding) {
  fs::path head = head_or_dir;
  if (fs::is_directory(head)) {
    std::vector<fs::path> heads;
    for (const auto& entry : fs::directory_iterator(head)) {
      const fs::path& p = entry.path();
      const std::string stem = p.stem().string();
      if (p.extension() != ".onnx" || stem == "melspectrogram" || stem == "embedding_model" ||
          stem.find("silero") != std::string::npos)
        continue;
      heads.push_back(p);
    }
    if (heads.size() != 1) {
      return invalid_argument("--wake-word ", head_or_dir, ": expected one wake-word head .onnx ",
                              "(besides melspectrogram/embedding_model), found ", heads.size(),
                              "; name the head file instead");
    }
    head = heads[0];
  }
  const fs::path dir = head.parent_path();
  const std::string mel_path = mel.empty() ? beside(dir, "melspectrogram") : mel;
  const std::string embedding_path = embedding.empty() ? beside(dir, "embedding_model") : embedding;
  if (mel_path.empty() || embedding_path.empty()) {
    return invalid_argument("--wake-word ", head.string(), ": melspectrogram and embedding_model ",
                            "(.onnx or .engine) must lie beside it, or be given with ",
                            "--wake-mel / --wake-embedding");
  }
  stream::WakeWordConfig config;
  BuilderConfig mel_config;
  OptimizationProfile profile{"chunk", {}};
  profile.inputs["input"] = ShapeRange{{1, 1760}, {1, 1760}, {1, 1760}};
  mel_config.profiles.push_back(profile);
  VOXRT_ASSIGN_OR_RETURN(config.melspectrogram_engine,
                         engine_for_model(mel_path, mel_config, "oww mel input 1x1760"));
  VOXRT_ASSIGN_OR_RETURN(config.embedding_engine,
                         engine_for_model(embedding_path, BuilderConfig{}, "oww embedding"));
  VOXRT_ASSIGN_OR_RETURN(config.head_engine,
                         engine_for_model(head.string(), BuilderConfig{}, "oww head"));
  return config;
}

}  // namespace voxrt::cli
