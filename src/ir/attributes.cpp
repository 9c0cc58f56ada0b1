#include "ir/attributes.h"

namespace voxrt::ir {

std::int64_t Attributes::get_int(const std::string& name, std::int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (auto* v = std::get_if<std::int64_t>(&it->second)) return *v;
  if (auto* f = std::get_if<float>(&it->second)) return static_cast<std::int64_t>(*f);
  return fallback;
}

float Attributes::get_float(const std::string& name, float fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<float>(*i);
  return fallback;
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fallback;
}

std::vector<std::int64_t> Attributes::get_ints(const std::string& name,
                                               const std::vector<std::int64_t>& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<std::int64_t>>(&it->second)) return *v;
  return fallback;
}

std::vector<float> Attributes::get_floats(const std::string& name,
                                          const std::vector<float>& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<float>>(&it->second)) return *v;
  return fallback;
}

std::vector<std::string> Attributes::get_strings(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return {};
  if (auto* v = std::get_if<std::vector<std::string>>(&it->second)) return *v;
  return {};
}

const Tensor* Attributes::get_tensor(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  return std::get_if<Tensor>(&it->second);
}

std::shared_ptr<Graph> Attributes::get_graph(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  if (auto* g = std::get_if<std::shared_ptr<Graph>>(&it->second)) return *g;
  return nullptr;
}

}  // namespace voxrt::ir
