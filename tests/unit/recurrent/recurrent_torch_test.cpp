// The reference kernel against PyTorch: small nn.GRU / nn.LSTM / nn.RNN modules are exported to
// ONNX by export_torch_rnn.py (Debian's torch 1.13), and the exported node's attributes and
// W/R/B initializers are run here; torch's outputs are the expected values. This checks our
// reading of the ONNX semantics (gate orders, linear_before_reset = 1, bidirectional layout).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "unit/recurrent/recurrent_harness.h"

namespace voxrt::recurrent_test {
namespace {

struct TorchCase {
  std::string name, op, direction;
  std::int64_t hidden = 0;
  std::int64_t linear_before_reset = 0;
  std::vector<std::string> activations;
  std::map<std::string, Tensor> tensors;
};

std::vector<TorchCase> read_cases(const std::string& path) {
  std::vector<TorchCase> cases;
  std::ifstream in(path);
  std::string word;
  while (in >> word) {
    if (word == "case") {
      cases.emplace_back();
      in >> cases.back().name;
    } else if (word == "op") {
      in >> cases.back().op;
    } else if (word == "direction") {
      in >> cases.back().direction;
    } else if (word == "hidden") {
      in >> cases.back().hidden;
    } else if (word == "linear_before_reset") {
      in >> cases.back().linear_before_reset;
    } else if (word == "activations") {
      int count = 0;
      in >> count;
      for (int i = 0; i < count; ++i) {
        in >> word;
        cases.back().activations.push_back(word);
      }
    } else if (word == "tensor") {
      std::string name;
      std::size_t rank = 0;
      in >> name >> rank;
      Dims dims(rank);
      for (auto& d : dims) in >> d;
      Tensor t = Tensor::uninitialized(DType::kF32, dims);
      for (float& v : t.span<float>()) in >> v;
      cases.back().tensors[name] = t;
    }
  }
  return cases;
}

TEST(RecurrentReferenceVsTorch, ExportedModulesMatchTorchOutputs) {
  const char* binary_dir = std::getenv("VOXRT_BINARY_DIR");
  // ctest sets VOXRT_BINARY_DIR; a binary run by hand writes to /tmp, never into the sources.
  const std::filesystem::path out_dir =
      binary_dir ? std::filesystem::path(binary_dir) / "tests" / "unit" / "recurrent"
                 : std::filesystem::temp_directory_path() / "voxrt-recurrent-torch";
  std::filesystem::create_directories(out_dir);
  const std::string fixture = (out_dir / "torch_rnn_cases.txt").string();
  const std::string command = std::string("/usr/bin/python3 ") + VOXRT_RECURRENT_TORCH_SCRIPT +
                              " " + fixture + " 2>" + (out_dir / "export_torch_rnn.log").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << "failed: " << command;
  const std::vector<TorchCase> cases = read_cases(fixture);
  ASSERT_EQ(cases.size(), 6u);

  for (const TorchCase& tc : cases) {
    SCOPED_TRACE(tc.name);
    RecurrentCase c;
    c.op = tc.op == "GRU"    ? ir::OpKind::kGRU
           : tc.op == "LSTM" ? ir::OpKind::kLSTM
                             : ir::OpKind::kRNN;
    c.direction = tc.direction;
    c.hidden = tc.hidden;
    c.linear_before_reset = static_cast<int>(tc.linear_before_reset);
    c.activations = tc.activations;
    const Tensor& x = tc.tensors.at("X");
    c.seq = x.dim(0);
    c.batch = x.dim(1);
    c.input = x.dim(2);
    c.initial_states = true;
    std::vector<std::optional<Tensor>> given(8);
    given[0] = x;
    given[1] = tc.tensors.at("W");
    given[2] = tc.tensors.at("R");
    given[3] = tc.tensors.at("B");
    given[5] = tc.tensors.at("initial_h");
    if (c.op == ir::OpKind::kLSTM) given[6] = tc.tensors.at("initial_c");
    RecurrentFixture f;
    build_fixture(c, f, given);
    auto outputs = run_tactic(f, 0, 1);
    ASSERT_TRUE(outputs.has_value()) << outputs.status().to_string();
    EXPECT_LE(worst_error_ratio((*outputs)[0], tc.tensors.at("Y"), 1e-5, 1e-4), 1.0);
    EXPECT_LE(worst_error_ratio((*outputs)[1], tc.tensors.at("Y_h"), 1e-5, 1e-4), 1.0);
    if (c.op == ir::OpKind::kLSTM) {
      EXPECT_LE(worst_error_ratio((*outputs)[2], tc.tensors.at("Y_c"), 1e-5, 1e-4), 1.0);
    }
  }
}

// A hand-computed case: RNN with H = 1, W = 2, R = 0.5, B = (0.1, -0.3), Tanh.
TEST(RecurrentReference, HandComputedRnn) {
  RecurrentCase c;
  c.op = ir::OpKind::kRNN;
  c.hidden = 1;
  c.input = 1;
  c.seq = 2;
  c.batch = 1;
  std::vector<std::optional<Tensor>> given(6);
  given[0] = Tensor::from_vector<float>({2, 1, 1}, {0.5f, -1.0f});
  given[1] = Tensor::from_vector<float>({1, 1, 1}, {2.0f});
  given[2] = Tensor::from_vector<float>({1, 1, 1}, {0.5f});
  given[3] = Tensor::from_vector<float>({1, 2}, {0.1f, -0.3f});
  RecurrentFixture f;
  build_fixture(c, f, given);
  auto outputs = run_tactic(f, 0, 1);
  ASSERT_TRUE(outputs.has_value()) << outputs.status().to_string();
  const float h1 = std::tanh(2.0f * 0.5f - 0.2f);
  const float h2 = std::tanh(2.0f * -1.0f + 0.5f * h1 - 0.2f);
  EXPECT_NEAR((*outputs)[0].data<float>()[0], h1, 1e-6);
  EXPECT_NEAR((*outputs)[0].data<float>()[1], h2, 1e-6);
  EXPECT_NEAR((*outputs)[1].data<float>()[0], h2, 1e-6);
}

}  // namespace
}  // namespace voxrt::recurrent_test
