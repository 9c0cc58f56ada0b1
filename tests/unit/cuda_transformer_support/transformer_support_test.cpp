// The CUDA backend claims every node of the Transformer-era exports (export_support_models.py,
// run here at test time), as `voxrt build --device cuda` checks them: after shape inference and
// the builder's passes, at every precision, with the batch dim left dynamic (the most shape code
// stays in the graph then) and pinned to 1 (as a fixed profile leaves it). Every non-view node
// must also list at least one tactic. No GPU is needed: these are the backend's static decisions.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_common.h"
#include "builder/pass_pipeline.h"
#include "ir/shape_inference.h"
#include "ir/view_ops.h"
#include "onnx_import/importer.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;
namespace cuda = backends::cuda;

fs::path source_dir() {
  const char* s = std::getenv("VOXRT_SOURCE_DIR");
  return s ? fs::path(s) : fs::path(".");
}
fs::path binary_dir() {
  const char* b = std::getenv("VOXRT_BINARY_DIR");
  return b ? fs::path(b) : fs::path(".");
}

class TransformerExports : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = binary_dir() / "tests/unit/cuda_transformer_support/exported";
    fs::create_directories(out_);
    const fs::path script =
        source_dir() / "tests/unit/cuda_transformer_support/export_support_models.py";
    const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + out_.string() +
                            "' > '" + (out_ / "export.log").string() + "' 2>&1";
    export_rc_ = std::system(cmd.c_str());
    // The models tests/models checks against onnxruntime (the CPU side's exports of torchaudio,
    // wav2vec2/HuBERT, Whisper with optimum's names, icefall's and NeMo's Conformers).
    models_out_ = out_ / "models";
    fs::create_directories(models_out_);
    const fs::path models_script = source_dir() / "tests/models/export_transformer_models.py";
    models_rc_ = fs::exists(models_script)
                     ? std::system(("/usr/bin/python3 '" + models_script.string() + "' '" +
                                    models_out_.string() + "' > '" +
                                    (models_out_ / "export.log").string() + "' 2>&1")
                                       .c_str())
                     : -1;
  }

  static std::string export_log() {
    std::ifstream in(out_ / "export.log");
    std::stringstream s;
    s << in.rdbuf();
    const std::string all = s.str();
    return all.size() > 3000 ? all.substr(all.size() - 3000) : all;
  }

  // Every node the CUDA backend would refuse in `name`, batch dynamic and batch pinned to 1.
  void expect_claimed(const std::string& name) {
    ASSERT_EQ(export_rc_, 0) << export_log();
    expect_claimed_file(out_ / name);
  }

  void expect_claimed_file(const fs::path& path) {
    const std::string name = path.filename().string();
    ASSERT_TRUE(fs::exists(path)) << name << " was not exported:\n" << export_log();
    for (const bool pin_batch : {false, true}) {
      SCOPED_TRACE(pin_batch ? "batch pinned to 1" : "batch dynamic");
      auto graph = onnx_import::import_model_file(path.string());
      ASSERT_TRUE(graph) << graph.status().message();
      if (pin_batch) {
        for (ir::Value* in : (*graph)->inputs)
          if (in->rank_known && !in->shape.empty() && !in->shape[0].is_known())
            in->shape[0] = ir::Dim::known(1);
      }
      ASSERT_TRUE(ir::infer_graph(**graph).is_ok());
      std::vector<std::string> changes;
      const Status optimized = builder::optimize_graph(**graph, changes);
      ASSERT_TRUE(optimized.is_ok()) << optimized.message();
      std::map<std::string, int> ops;
      for (const ir::Node* n : (*graph)->nodes()) ++ops[std::string(ir::op_name(n->op))];
      std::string op_list;
      for (const auto& [op, count] : ops) op_list += str_cat(op, " x", count, ", ");
      std::cout << "[ note ] " << name << (pin_batch ? " (batch 1): " : ": ") << op_list << "\n";
      for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
        SCOPED_TRACE(precision_name(p));
        std::string all;
        for (const auto& m : cuda::cuda_backend().unsupported_nodes(**graph, p)) all += "\n  " + m;
        EXPECT_TRUE(all.empty()) << name << ": nodes the CUDA backend does not take:" << all;
        for (const ir::Node* n : (*graph)->nodes()) {
          if (ir::is_view_op(*n)) continue;
          EXPECT_FALSE(cuda::tactics_for(*n, p).empty()) << n->describe() << " lists no tactic";
        }
      }
    }
  }

  static inline fs::path out_, models_out_;
  static inline int export_rc_ = -1, models_rc_ = -1;
};

TEST_F(TransformerExports, StreamingConformerChunk) {
  expect_claimed("conformer_chunk.onnx");
}
TEST_F(TransformerExports, WhisperEncoder) {
  expect_claimed("whisper_encoder.onnx");
}
TEST_F(TransformerExports, WhisperDecoderStep) {
  expect_claimed("whisper_decoder_step.onnx");
}
TEST_F(TransformerExports, TorchaudioConformerWithPaddingMasks) {
  expect_claimed("ta_conformer.onnx");
}
TEST_F(TransformerExports, TorchaudioEmformer) {
  expect_claimed("ta_emformer.onnx");
}
TEST_F(TransformerExports, Wav2vec2) {
  expect_claimed("wav2vec2.onnx");
}

// Every model tests/models/export_transformer_models.py exports (its small sizes).
TEST_F(TransformerExports, EveryModelOfTheModelsTests) {
  ASSERT_EQ(models_rc_, 0) << "tests/models/export_transformer_models.py failed; see "
                           << (models_out_ / "export.log").string();
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(models_out_)) {
    if (entry.path().extension() != ".onnx") continue;
    expect_claimed_file(entry.path());
    ++checked;
  }
  EXPECT_GE(checked, 10) << "fewer exports than expected in " << models_out_.string();
}

}  // namespace
}  // namespace voxrt
