#include "onnx_import/graph_import.h"

#include <unordered_set>

#include "onnx_import/attribute_conversion.h"
#include "onnx_import/op_importer.h"
#include "onnx_import/tensor_conversion.h"

namespace voxrt::onnx_import {

ir::Value* Scope::find_local(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : it->second;
}

ir::Value* Scope::resolve(const std::string& name) {
  if (ir::Value* local = find_local(name)) return local;
  if (!parent_ || !parent_->resolve(name)) return nullptr;
  return capture_input(name);
}

ir::Value* Scope::capture_input(const std::string& name) {
  for (auto& [captured_name, value] : captures_) {
    if (captured_name == name) return value;
  }
  ir::Value* outer = parent_ ? parent_->resolve(name) : nullptr;
  if (!outer) return nullptr;
  // The branch may define its own value of that name (ONNX forbids it, but be safe): then the
  // input gets a fresh name and the local definition keeps the name.
  const bool taken = find_local(name) != nullptr;
  ir::Value* input = graph_.add_value(taken ? graph_.unique_name(name) : name, outer->dtype,
                                      outer->shape, outer->rank_known);
  if (!taken) values_[name] = input;
  captures_.emplace_back(name, input);
  return input;
}

Status apply_type(const onnx::TypeProto& type, std::string_view where, ir::Value& value) {
  if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) return Status::ok();
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    return unsupported(where,
                       ": only tensor types are supported (found a sequence, map, "
                       "optional or sparse type)");
  }
  const onnx::TypeProto::Tensor& tensor = type.tensor_type();
  if (tensor.has_elem_type()) {
    VOXRT_ASSIGN_OR_RETURN(value.dtype, dtype_from_onnx(tensor.elem_type(), where));
  }
  if (!tensor.has_shape()) return Status::ok();
  ir::SymShape shape;
  for (const auto& dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(ir::Dim::known(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      shape.push_back(ir::Dim::symbolic(dim.dim_param()));
    } else {
      shape.push_back(ir::Dim{});
    }
  }
  value.shape = std::move(shape);
  value.rank_known = true;
  return Status::ok();
}

namespace {

std::string_view display_domain(const std::string& domain) {
  return domain.empty() ? std::string_view("ai.onnx") : std::string_view(domain);
}

class GraphImporter {
 public:
  GraphImporter(const onnx::GraphProto& proto, ModelContext& context, Scope& scope)
      : proto_(proto), context_(context), scope_(scope), graph_(scope.graph()) {}

  Status import_inputs() {
    std::unordered_set<std::string> initializer_names;
    for (const auto& init : proto_.initializer()) initializer_names.insert(init.name());
    for (const onnx::ValueInfoProto& input : proto_.input()) {
      if (initializer_names.count(input.name())) continue;  // a constant, not a graph input
      const std::string where = str_cat(prefix(), "graph input '", input.name(), "'");
      if (input.name().empty()) return invalid_argument(where, ": has no name");
      if (scope_.find_local(input.name())) return invalid_argument(where, ": declared twice");
      ir::Value* value = graph_.add_value(input.name(), DType::kF32, {}, false);
      Status typed = apply_type(input.type(), where, *value);
      if (typed.code() == StatusCode::kUnsupported) {
        context_.unsupported.push_back(typed.message());
      } else if (!typed) {
        return typed;
      }
      scope_.define(input.name(), value);
      graph_.inputs.push_back(value);
    }
    return Status::ok();
  }

  Status import_body() {
    VOXRT_RETURN_IF_ERROR(import_initializers());
    for (const onnx::ValueInfoProto& info : proto_.value_info()) value_info_[info.name()] = &info;
    for (const onnx::ValueInfoProto& info : proto_.output()) output_info_[info.name()] = &info;
    VOXRT_RETURN_IF_ERROR(define_node_outputs());
    for (int i = 0; i < proto_.node_size(); ++i) {
      VOXRT_RETURN_IF_ERROR(import_node(proto_.node(i), node_names_[static_cast<std::size_t>(i)]));
    }
    return import_outputs();
  }

 private:
  Status import_initializers() {
    for (const onnx::TensorProto& init : proto_.initializer()) {
      const std::string where = str_cat(prefix(), "initializer '", init.name(), "'");
      if (init.name().empty()) return invalid_argument(where, ": has no name");
      if (scope_.find_local(init.name())) return invalid_argument(where, ": defined twice");
      Expected<Tensor> tensor = tensor_from_proto(init, where, context_.external_data_dir);
      if (!tensor) {
        if (tensor.status().code() != StatusCode::kUnsupported) return tensor.status();
        // Keep going so the error can list everything unsupported at once.
        context_.unsupported.push_back(tensor.status().message());
        scope_.define(init.name(), graph_.add_value(init.name(), DType::kF32, {}, false));
        continue;
      }
      scope_.define(init.name(), graph_.add_constant(init.name(), std::move(tensor).value()));
    }
    return Status::ok();
  }

  // Every node's outputs exist before any node is imported, so graphs that are not sorted and
  // branches that read later outer values still resolve.
  Status define_node_outputs() {
    std::unordered_set<std::string> used_node_names;
    for (const auto& node : proto_.node()) used_node_names.insert(node.name());
    for (int i = 0; i < proto_.node_size(); ++i) {
      const onnx::NodeProto& node = proto_.node(i);
      std::string name = node.name();
      if (name.empty()) {
        name = str_cat(node.op_type(), "_", i);
        while (used_node_names.count(name)) name += "_";
        used_node_names.insert(name);
      }
      for (const std::string& output : node.output()) {
        if (output.empty()) continue;
        if (scope_.find_local(output)) {
          return invalid_argument(prefix(), "node '", name, "' (", node.op_type(), "): output '",
                                  output,
                                  "' is already defined by an input, initializer or other node");
        }
        ir::Value* value = graph_.add_value(output, DType::kF32, {}, false);
        if (const onnx::TypeProto* type = declared_type(output)) {
          Status typed = apply_type(*type, str_cat("value_info '", output, "'"), *value);
          if (!typed && typed.code() != StatusCode::kUnsupported) return typed;
        }
        scope_.define(output, value);
      }
      node_names_.push_back(std::move(name));
    }
    return Status::ok();
  }

  const onnx::TypeProto* declared_type(const std::string& name) const {
    if (auto it = value_info_.find(name); it != value_info_.end()) return &it->second->type();
    if (auto it = output_info_.find(name); it != output_info_.end()) return &it->second->type();
    return nullptr;
  }

  void add_unsupported(const onnx::NodeProto& node, const std::string& name, int opset,
                       std::string_view reason) {
    context_.unsupported.push_back(str_cat("node '", name, "' (", node.op_type(), ", domain '",
                                           display_domain(node.domain()), "', opset ", opset, ")",
                                           scope_.where().empty() ? "" : " in ", scope_.where(),
                                           ": ", reason));
  }

  Status import_node(const onnx::NodeProto& node, const std::string& name) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!default_domain) {
      auto it = context_.domain_opsets.find(node.domain());
      add_unsupported(node, name, it == context_.domain_opsets.end() ? 0 : it->second,
                      "only the ai.onnx domain is supported");
      return Status::ok();
    }
    const int opset = context_.onnx_opset;
    if (opset == 0) {
      return invalid_argument(prefix(), "node '", name, "' (", node.op_type(),
                              "): the model imports no ai.onnx opset");
    }
    const OpImporter* importer = find_op_importer(node.op_type());
    if (!importer) {
      add_unsupported(node, name, opset, "voxrt has no importer for this op");
      return Status::ok();
    }
    if (opset < importer->min_opset) {
      add_unsupported(
          node, name, opset,
          str_cat("only opset ", importer->min_opset, " and later forms are supported"));
      return Status::ok();
    }
    NodeImport import{node, context_, scope_, name, opset, importer->op, {}, {}, {}};
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& input = node.input(i);
      if (input.empty()) {
        import.inputs.push_back(nullptr);
        continue;
      }
      ir::Value* value = scope_.resolve(input);
      if (!value) {
        return invalid_argument(prefix(), import.describe(), ": input ", i, " '", input,
                                "' is not defined by any graph input, initializer or node output");
      }
      import.inputs.push_back(value);
    }
    for (const std::string& output : node.output()) {
      import.outputs.push_back(output.empty() ? nullptr : scope_.find_local(output));
    }
    Status converted = convert_attributes(node, str_cat(prefix(), import.describe()),
                                          context_.external_data_dir, import.attrs);
    if (converted.code() == StatusCode::kUnsupported) {
      add_unsupported(node, name, opset, converted.message());
      return Status::ok();
    }
    VOXRT_RETURN_IF_ERROR(converted);
    Status imported = importer->import(import);
    if (imported.code() == StatusCode::kUnsupported) {
      add_unsupported(node, name, opset, imported.message());
      return Status::ok();
    }
    if (!imported) return scope_.where().empty() ? imported : imported.with_context(scope_.where());
    return Status::ok();
  }

  Status import_outputs() {
    for (const onnx::ValueInfoProto& output : proto_.output()) {
      ir::Value* value = scope_.resolve(output.name());
      if (!value) {
        return invalid_argument(prefix(), "graph output '", output.name(),
                                "' is not produced by any node, input or initializer");
      }
      if (!value->rank_known && !value->is_constant()) {
        Status typed =
            apply_type(output.type(), str_cat("graph output '", output.name(), "'"), *value);
        if (!typed && typed.code() != StatusCode::kUnsupported) return typed;
      }
      graph_.outputs.push_back(value);
    }
    return Status::ok();
  }

  std::string prefix() const { return scope_.where().empty() ? "" : scope_.where() + ": "; }

  const onnx::GraphProto& proto_;
  ModelContext& context_;
  Scope& scope_;
  ir::Graph& graph_;
  std::vector<std::string> node_names_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> value_info_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> output_info_;
};

}  // namespace

Status import_main_graph(const onnx::GraphProto& proto, ModelContext& context, ir::Graph& graph) {
  graph.name = proto.name();
  Scope scope(graph, nullptr, "");
  GraphImporter importer(proto, context, scope);
  VOXRT_RETURN_IF_ERROR(importer.import_inputs());
  return importer.import_body();
}

Status import_subgraph(const onnx::GraphProto& proto, ModelContext& context, Scope& scope) {
  scope.graph().name = proto.name();
  if (proto.input_size() != 0) {
    return invalid_argument(scope.where(), ": declares ", proto.input_size(),
                            " graph inputs; If branches take none in ONNX");
  }
  GraphImporter importer(proto, context, scope);
  return importer.import_body();
}

}  // namespace voxrt::onnx_import
