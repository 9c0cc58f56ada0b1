#include "ort/ort_bridge.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace voxrt::ort {
namespace fs = std::filesystem;
namespace {

fs::path source_root() {
  // VOXRT_SOURCE_DIR (set by ctest) or the compile-time source folder.
  if (const char* env = std::getenv("VOXRT_SOURCE_DIR")) return env;
  return VOXRT_SOURCE_ROOT;
}

}  // namespace

bool onnxruntime_available() {
  return fs::exists(source_root() / ".third_party/node_modules/onnxruntime-node/package.json") &&
         std::system("command -v node >/dev/null 2>&1") == 0;
}

Expected<OrtResult> run_onnxruntime(const std::string& onnx_path,
                                    const std::vector<std::string>& input_names,
                                    const std::vector<Tensor>& inputs,
                                    const std::vector<std::string>& output_names,
                                    const OrtRunOptions& options) {
  if (!onnxruntime_available()) {
    return failed_precondition(
        "onnxruntime-node is not installed: run scripts/fetch-third-party.sh");
  }
  char pattern[] = "/tmp/voxrt-ort-XXXXXX";
  if (!::mkdtemp(pattern)) return io_error("cannot create a temporary folder for onnxruntime");
  const fs::path dir = pattern;
  nlohmann::json manifest;
  manifest["model"] = fs::absolute(onnx_path).string();
  manifest["threads"] = options.threads;
  manifest["iterations"] = options.timed_iterations;
  manifest["outputs"] = output_names;
  manifest["inputs"] = nlohmann::json::array();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string file = str_cat("in_", i, ".bin");
    std::ofstream out(dir / file, std::ios::binary);
    out.write(static_cast<const char*>(inputs[i].raw_data()),
              static_cast<std::streamsize>(inputs[i].size_bytes()));
    manifest["inputs"].push_back({{"name", input_names[i]},
                                  {"dtype", dtype_name(inputs[i].dtype())},
                                  {"dims", inputs[i].dims()},
                                  {"file", file}});
  }
  std::ofstream(dir / "manifest.json") << manifest.dump();
  const std::string command =
      str_cat("node '", (source_root() / "tools/ort/ort_run.js").string(), "' '", dir.string(),
              "' 2>'", (dir / "stderr.txt").string(), "'");
  const int rc = std::system(command.c_str());
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  if (rc != 0) {
    std::ifstream err(dir / "stderr.txt");
    std::string message((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    cleanup();
    return internal_error("onnxruntime failed on ", onnx_path, ": ", message);
  }
  OrtResult result;
  try {
    nlohmann::json out = nlohmann::json::parse(std::ifstream(dir / "outputs.json"));
    for (const auto& o : out["outputs"]) {
      auto dtype = dtype_from_name(o["dtype"].get<std::string>());
      if (!dtype) {
        cleanup();
        return unsupported("onnxruntime output '", o["name"].get<std::string>(), "' has dtype ",
                           o["dtype"].dump());
      }
      Dims dims = o["dims"].get<Dims>();
      Tensor t = Tensor::uninitialized(*dtype, dims);
      std::ifstream data(dir / o["file"].get<std::string>(), std::ios::binary);
      data.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.size_bytes()));
      result.outputs.push_back(std::move(t));
    }
    result.times_ms = out["times_ms"].get<std::vector<double>>();
    if (out.contains("cpu_times_ms"))
      result.cpu_times_ms = out["cpu_times_ms"].get<std::vector<double>>();
  } catch (const std::exception& e) {
    cleanup();
    return internal_error("cannot read onnxruntime's outputs: ", e.what());
  }
  cleanup();
  return result;
}

}  // namespace voxrt::ort
