// Node attributes, by ONNX name. Typed getters return the default when an attribute is absent.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "voxrt/tensor.h"

namespace voxrt::ir {

class Graph;

// The order of alternatives is stored in engine files: append only.
using AttributeValue =
    std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>,
                 std::vector<std::string>, Tensor, std::shared_ptr<Graph>>;

class Attributes {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }

  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<std::int64_t> get_ints(const std::string& name,
                                     const std::vector<std::int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name,
                                const std::vector<float>& fallback = {}) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  const Tensor* get_tensor(const std::string& name) const;
  std::shared_ptr<Graph> get_graph(const std::string& name) const;

  const std::map<std::string, AttributeValue>& all() const { return values_; }

 private:
  std::map<std::string, AttributeValue> values_;
};

}  // namespace voxrt::ir
