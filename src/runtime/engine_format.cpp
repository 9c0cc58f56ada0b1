#include "runtime/engine_format.h"

#include <unordered_map>

#include "runtime/byte_stream.h"

namespace voxrt::runtime {
namespace {

constexpr std::uint32_t kMaxRank = 16;
constexpr std::uint32_t kMaxGraphDepth = 8;

// ---- writing ---------------------------------------------------------------------------------

struct GraphWriter {
  ByteWriter& out;
  ByteWriter& weights;

  void put_tensor_ref(const Tensor& t) {
    weights.align(64);
    const std::uint64_t offset = weights.size();
    weights.put_bytes(t.raw_data(), t.size_bytes());
    out.put<std::uint8_t>(static_cast<std::uint8_t>(t.dtype()));
    out.put<std::uint32_t>(static_cast<std::uint32_t>(t.rank()));
    for (auto d : t.dims()) out.put<std::int64_t>(d);
    out.put<std::uint64_t>(offset);
    out.put<std::uint64_t>(t.size_bytes());
  }

  void put_attribute(const ir::AttributeValue& value) {
    out.put<std::uint8_t>(static_cast<std::uint8_t>(value.index()));
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, float>) {
            out.put(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            out.put_string(v);
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                               std::is_same_v<T, std::vector<float>>) {
            out.put<std::uint32_t>(static_cast<std::uint32_t>(v.size()));
            for (auto x : v) out.put(x);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            out.put<std::uint32_t>(static_cast<std::uint32_t>(v.size()));
            for (auto& x : v) out.put_string(x);
          } else if constexpr (std::is_same_v<T, Tensor>) {
            put_tensor_ref(v);
          } else {
            put_graph(*v);
          }
        },
        value);
  }

  void put_graph(const ir::Graph& g) {
    auto order = g.topological_order();
    const std::vector<ir::Node*> nodes = order ? *order : g.nodes();
    const std::vector<ir::Value*> values = g.values();
    std::unordered_map<const ir::Value*, std::int32_t> index;
    for (std::size_t i = 0; i < values.size(); ++i) index[values[i]] = static_cast<std::int32_t>(i);
    auto ref = [&](const ir::Value* v) { return v ? index.at(v) : -1; };

    out.put_string(g.name);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(values.size()));
    for (const ir::Value* v : values) {
      out.put_string(v->name);
      out.put<std::uint8_t>(static_cast<std::uint8_t>(v->dtype));
      out.put<std::uint8_t>(v->rank_known ? 1 : 0);
      out.put<std::uint32_t>(static_cast<std::uint32_t>(v->shape.size()));
      for (const ir::Dim& d : v->shape) {
        out.put<std::int64_t>(d.value);
        out.put_string(d.symbol);
      }
      out.put<std::uint8_t>(v->constant ? 1 : 0);
      if (v->constant) put_tensor_ref(*v->constant);
    }
    out.put<std::uint32_t>(static_cast<std::uint32_t>(nodes.size()));
    for (const ir::Node* n : nodes) {
      out.put<std::uint16_t>(static_cast<std::uint16_t>(n->op));
      out.put_string(n->name);
      out.put<std::int32_t>(n->opset);
      out.put<std::uint32_t>(static_cast<std::uint32_t>(n->inputs.size()));
      for (auto* v : n->inputs) out.put<std::int32_t>(ref(v));
      out.put<std::uint32_t>(static_cast<std::uint32_t>(n->outputs.size()));
      for (auto* v : n->outputs) out.put<std::int32_t>(ref(v));
      out.put<std::uint32_t>(static_cast<std::uint32_t>(n->origin.size()));
      for (auto& o : n->origin) out.put_string(o);
      out.put<std::uint32_t>(static_cast<std::uint32_t>(n->attrs.all().size()));
      for (auto& [name, value] : n->attrs.all()) {
        out.put_string(name);
        put_attribute(value);
      }
    }
    out.put<std::uint32_t>(static_cast<std::uint32_t>(g.inputs.size()));
    for (auto* v : g.inputs) out.put<std::int32_t>(ref(v));
    out.put<std::uint32_t>(static_cast<std::uint32_t>(g.outputs.size()));
    for (auto* v : g.outputs) out.put<std::int32_t>(ref(v));
    out.put<std::uint32_t>(static_cast<std::uint32_t>(g.metadata.size()));
    for (auto& [k, v] : g.metadata) {
      out.put_string(k);
      out.put_string(v);
    }
  }
};

void put_dims(ByteWriter& out, const Dims& dims) {
  out.put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
  for (auto d : dims) out.put<std::int64_t>(d);
}

// ---- reading ---------------------------------------------------------------------------------

struct GraphReader {
  ByteReader& in;
  const char* weights;
  std::size_t weights_size;
  std::size_t weights_file_offset;
  std::shared_ptr<void> keepalive;

  Status get_tensor_ref(Tensor& t) {
    std::uint8_t dtype_code = 0;
    std::uint32_t rank = 0;
    VOXRT_RETURN_IF_ERROR(in.get(dtype_code));
    const std::size_t at = in.offset();
    VOXRT_RETURN_IF_ERROR(in.get(rank));
    if (dtype_code < 1 || dtype_code > 8) {
      return corrupt("engine graph: unknown dtype code ", int(dtype_code), " at offset ", at - 1);
    }
    if (rank > kMaxRank)
      return corrupt("engine graph: tensor rank ", rank, " at offset ", at, " exceeds ", kMaxRank);
    Dims dims(rank);
    for (auto& d : dims) {
      VOXRT_RETURN_IF_ERROR(in.get(d));
      if (d < 0 || d > (std::int64_t{1} << 40))
        return corrupt("engine graph: tensor dim ", d, " at offset ", in.offset() - 8);
    }
    std::uint64_t offset = 0, bytes = 0;
    VOXRT_RETURN_IF_ERROR(in.get(offset));
    VOXRT_RETURN_IF_ERROR(in.get(bytes));
    const auto dtype = static_cast<DType>(dtype_code);
    // Overflow-safe size check: element count against the declared byte size.
    long double expected = static_cast<long double>(dtype_size_bytes(dtype));
    for (auto d : dims) expected *= static_cast<long double>(d);
    if (expected != static_cast<long double>(bytes)) {
      return corrupt("engine graph: tensor at offset ", at, " declares ", bytes, " bytes but ",
                     dims_to_string(dims), " x ", dtype_name(dtype), " needs ",
                     static_cast<double>(expected));
    }
    if (offset > weights_size || bytes > weights_size - offset) {
      return corrupt("engine weights: tensor [", offset, ", +", bytes,
                     ") lies outside the weights section of ", weights_size, " bytes (file offset ",
                     weights_file_offset, ")");
    }
    t = Tensor::wrap(dtype, std::move(dims), const_cast<char*>(weights + offset), keepalive);
    return Status::ok();
  }

  Status get_attribute(ir::AttributeValue& value, std::uint32_t depth) {
    std::uint8_t kind = 0;
    const std::size_t at = in.offset();
    VOXRT_RETURN_IF_ERROR(in.get(kind));
    switch (kind) {
      case 0: {
        std::int64_t v = 0;
        VOXRT_RETURN_IF_ERROR(in.get(v));
        value = v;
        return Status::ok();
      }
      case 1: {
        float v = 0;
        VOXRT_RETURN_IF_ERROR(in.get(v));
        value = v;
        return Status::ok();
      }
      case 2: {
        std::string v;
        VOXRT_RETURN_IF_ERROR(in.get_string(v));
        value = std::move(v);
        return Status::ok();
      }
      case 3: {
        std::uint32_t n = 0;
        VOXRT_RETURN_IF_ERROR(in.get_count(n, 8));
        std::vector<std::int64_t> v(n);
        for (auto& x : v) VOXRT_RETURN_IF_ERROR(in.get(x));
        value = std::move(v);
        return Status::ok();
      }
      case 4: {
        std::uint32_t n = 0;
        VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
        std::vector<float> v(n);
        for (auto& x : v) VOXRT_RETURN_IF_ERROR(in.get(x));
        value = std::move(v);
        return Status::ok();
      }
      case 5: {
        std::uint32_t n = 0;
        VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
        std::vector<std::string> v(n);
        for (auto& x : v) VOXRT_RETURN_IF_ERROR(in.get_string(x));
        value = std::move(v);
        return Status::ok();
      }
      case 6: {
        Tensor t;
        VOXRT_RETURN_IF_ERROR(get_tensor_ref(t));
        value = std::move(t);
        return Status::ok();
      }
      case 7: {
        auto g = std::make_shared<ir::Graph>();
        VOXRT_RETURN_IF_ERROR(get_graph(*g, depth + 1));
        value = std::move(g);
        return Status::ok();
      }
      default:
        return corrupt("engine graph: unknown attribute kind ", int(kind), " at offset ", at);
    }
  }

  Status get_graph(ir::Graph& g, std::uint32_t depth) {
    if (depth > kMaxGraphDepth)
      return corrupt("engine graph: subgraphs nested deeper than ", kMaxGraphDepth);
    VOXRT_RETURN_IF_ERROR(in.get_string(g.name));
    std::uint32_t value_count = 0;
    VOXRT_RETURN_IF_ERROR(in.get_count(value_count, 11));
    std::vector<ir::Value*> values;
    values.reserve(value_count);
    for (std::uint32_t i = 0; i < value_count; ++i) {
      std::string name;
      std::uint8_t dtype_code = 0, rank_known = 0, has_constant = 0;
      std::uint32_t rank = 0;
      VOXRT_RETURN_IF_ERROR(in.get_string(name));
      const std::size_t dtype_at = in.offset();
      VOXRT_RETURN_IF_ERROR(in.get(dtype_code));
      if (dtype_code < 1 || dtype_code > 8) {
        return corrupt("engine graph: value '", name, "' has unknown dtype code ", int(dtype_code),
                       " at offset ", dtype_at);
      }
      VOXRT_RETURN_IF_ERROR(in.get(rank_known));
      VOXRT_RETURN_IF_ERROR(in.get(rank));
      if (rank > kMaxRank)
        return corrupt("engine graph: value '", name, "' has rank ", rank, " at offset ",
                       in.offset() - 4);
      ir::SymShape shape(rank);
      for (auto& d : shape) {
        VOXRT_RETURN_IF_ERROR(in.get(d.value));
        VOXRT_RETURN_IF_ERROR(in.get_string(d.symbol, 4096));
      }
      ir::Value* v = g.add_value(std::move(name), static_cast<DType>(dtype_code), std::move(shape),
                                 rank_known != 0);
      VOXRT_RETURN_IF_ERROR(in.get(has_constant));
      if (has_constant) {
        Tensor t;
        VOXRT_RETURN_IF_ERROR(get_tensor_ref(t));
        v->constant = std::move(t);
      }
      values.push_back(v);
    }
    auto deref = [&](std::int32_t idx, ir::Value*& out) -> Status {
      if (idx == -1) {
        out = nullptr;
        return Status::ok();
      }
      if (idx < 0 || static_cast<std::uint32_t>(idx) >= values.size()) {
        return corrupt("engine graph: value index ", idx, " at offset ", in.offset() - 4,
                       " is outside [0, ", values.size(), ")");
      }
      out = values[static_cast<std::size_t>(idx)];
      return Status::ok();
    };
    std::uint32_t node_count = 0;
    VOXRT_RETURN_IF_ERROR(in.get_count(node_count, 22));
    for (std::uint32_t i = 0; i < node_count; ++i) {
      std::uint16_t op_id = 0;
      const std::size_t op_at = in.offset();
      VOXRT_RETURN_IF_ERROR(in.get(op_id));
      auto op = ir::op_from_id(op_id);
      if (!op) {
        return unsupported("engine graph: op id ", op_id, " at offset ", op_at,
                           " is unknown to this runtime (engine built by a newer voxrt?)");
      }
      std::string name;
      std::int32_t opset = 0;
      VOXRT_RETURN_IF_ERROR(in.get_string(name));
      VOXRT_RETURN_IF_ERROR(in.get(opset));
      std::uint32_t n = 0;
      VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
      std::vector<ir::Value*> node_inputs(n);
      for (auto& v : node_inputs) {
        std::int32_t idx = 0;
        VOXRT_RETURN_IF_ERROR(in.get(idx));
        VOXRT_RETURN_IF_ERROR(deref(idx, v));
      }
      VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
      std::vector<ir::Value*> node_outputs(n);
      for (auto& v : node_outputs) {
        std::int32_t idx = 0;
        VOXRT_RETURN_IF_ERROR(in.get(idx));
        VOXRT_RETURN_IF_ERROR(deref(idx, v));
        if (v && v->producer)
          return corrupt("engine graph: value '", v->name, "' is produced twice (node '", name,
                         "')");
      }
      ir::Node* node =
          g.add_node(*op, std::move(name), std::move(node_inputs), std::move(node_outputs));
      node->opset = opset;
      VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
      node->origin.resize(n);
      for (auto& o : node->origin) VOXRT_RETURN_IF_ERROR(in.get_string(o));
      VOXRT_RETURN_IF_ERROR(in.get_count(n, 5));
      for (std::uint32_t a = 0; a < n; ++a) {
        std::string attr_name;
        ir::AttributeValue value;
        VOXRT_RETURN_IF_ERROR(in.get_string(attr_name));
        VOXRT_RETURN_IF_ERROR(get_attribute(value, depth));
        node->attrs.set(attr_name, std::move(value));
      }
    }
    std::uint32_t n = 0;
    VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
    for (std::uint32_t i = 0; i < n; ++i) {
      std::int32_t idx = 0;
      ir::Value* v = nullptr;
      VOXRT_RETURN_IF_ERROR(in.get(idx));
      VOXRT_RETURN_IF_ERROR(deref(idx, v));
      if (!v) return corrupt("engine graph: a graph input is missing");
      g.inputs.push_back(v);
    }
    VOXRT_RETURN_IF_ERROR(in.get_count(n, 4));
    for (std::uint32_t i = 0; i < n; ++i) {
      std::int32_t idx = 0;
      ir::Value* v = nullptr;
      VOXRT_RETURN_IF_ERROR(in.get(idx));
      VOXRT_RETURN_IF_ERROR(deref(idx, v));
      if (!v) return corrupt("engine graph: a graph output is missing");
      g.outputs.push_back(v);
    }
    VOXRT_RETURN_IF_ERROR(in.get_count(n, 8));
    for (std::uint32_t i = 0; i < n; ++i) {
      std::string k, v;
      VOXRT_RETURN_IF_ERROR(in.get_string(k));
      VOXRT_RETURN_IF_ERROR(in.get_string(v));
      g.metadata[k] = v;
    }
    VOXRT_RETURN_IF_ERROR(g.validate().with_context("engine graph"));
    return Status::ok();
  }
};

Status get_dims(ByteReader& in, Dims& dims) {
  std::uint32_t n = 0;
  VOXRT_RETURN_IF_ERROR(in.get_count(n, 8));
  if (n > kMaxRank) return corrupt("engine profiles: rank ", n, " at offset ", in.offset() - 4);
  dims.resize(n);
  for (auto& d : dims) VOXRT_RETURN_IF_ERROR(in.get(d));
  return Status::ok();
}

}  // namespace

Expected<std::string> serialize_engine(const EngineContents& contents) {
  if (!contents.graph) return invalid_argument("serialize_engine: no graph");
  std::vector<std::pair<SectionId, std::string>> sections;

  ByteWriter target;
  target.put<std::uint8_t>(static_cast<std::uint8_t>(contents.target.device));
  target.put<std::uint8_t>(static_cast<std::uint8_t>(contents.target.precision));
  target.put_string(contents.target.fingerprint);
  target.put_string(contents.target.builder_version);
  sections.emplace_back(SectionId::kTarget, std::move(target.bytes()));

  ByteWriter model;
  model.put<std::uint64_t>(contents.model_hash);
  sections.emplace_back(SectionId::kModel, std::move(model.bytes()));

  ByteWriter graph, weights;
  GraphWriter{graph, weights}.put_graph(*contents.graph);
  sections.emplace_back(SectionId::kGraph, std::move(graph.bytes()));
  sections.emplace_back(SectionId::kWeights, std::move(weights.bytes()));

  ByteWriter profiles;
  profiles.put<std::uint32_t>(static_cast<std::uint32_t>(contents.profiles.size()));
  for (const auto& p : contents.profiles) {
    profiles.put_string(p.name);
    profiles.put<std::uint32_t>(static_cast<std::uint32_t>(p.inputs.size()));
    for (const auto& [name, range] : p.inputs) {
      profiles.put_string(name);
      put_dims(profiles, range.min);
      put_dims(profiles, range.opt);
      put_dims(profiles, range.max);
    }
  }
  sections.emplace_back(SectionId::kProfiles, std::move(profiles.bytes()));

  ByteWriter states;
  states.put<std::uint32_t>(static_cast<std::uint32_t>(contents.states.size()));
  for (const auto& s : contents.states) {
    states.put_string(s.input);
    states.put_string(s.output);
  }
  sections.emplace_back(SectionId::kStates, std::move(states.bytes()));

  ByteWriter plan;
  plan.put<std::uint64_t>(contents.memory_plan.peak_bytes);
  plan.put<std::uint64_t>(contents.memory_plan.unplanned_bytes);
  plan.put<std::uint64_t>(contents.memory_plan.weights_bytes);
  plan.put<std::uint32_t>(static_cast<std::uint32_t>(contents.memory_plan.offsets.size()));
  for (const auto& [name, offset] : contents.memory_plan.offsets) {
    plan.put_string(name);
    plan.put<std::uint64_t>(offset);
  }
  sections.emplace_back(SectionId::kMemoryPlan, std::move(plan.bytes()));

  // Layout: header, table, then each section 64-byte aligned.
  ByteWriter file;
  file.put_bytes(kEngineMagic, 8);
  file.put<std::uint32_t>(kEngineFormatVersion);
  file.put<std::uint32_t>(kEngineHeaderBytes);
  file.put<std::uint64_t>(0);  // file_bytes, patched below
  file.put<std::uint64_t>(0);  // checksum, patched below
  file.put<std::uint32_t>(static_cast<std::uint32_t>(sections.size()));
  file.put<std::uint32_t>(0);
  const std::size_t table_at = file.size();
  for (std::size_t i = 0; i < sections.size(); ++i) {
    file.put<std::uint32_t>(0);
    file.put<std::uint32_t>(0);
    file.put<std::uint64_t>(0);
    file.put<std::uint64_t>(0);
  }
  std::vector<std::uint64_t> offsets;
  for (auto& [id, bytes] : sections) {
    file.align(64);
    offsets.push_back(file.size());
    file.put_bytes(bytes.data(), bytes.size());
  }
  std::string& out = file.bytes();
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const std::uint32_t id = static_cast<std::uint32_t>(sections[i].first);
    const std::uint64_t size = sections[i].second.size();
    std::memcpy(&out[table_at + i * 24], &id, 4);
    std::memcpy(&out[table_at + i * 24 + 8], &offsets[i], 8);
    std::memcpy(&out[table_at + i * 24 + 16], &size, 8);
  }
  const std::uint64_t file_bytes = out.size();
  std::memcpy(&out[16], &file_bytes, 8);
  const std::uint64_t checksum =
      fnv1a64(out.data() + kEngineHeaderBytes, out.size() - kEngineHeaderBytes);
  std::memcpy(&out[24], &checksum, 8);
  return std::move(out);
}

Expected<EngineContents> deserialize_engine(const char* image, std::size_t size,
                                            std::shared_ptr<void> keepalive) {
  ByteReader header(image, size, 0, "engine header");
  char magic[8] = {};
  for (char& c : magic) VOXRT_RETURN_IF_ERROR(header.get(c));
  if (std::memcmp(magic, kEngineMagic, 8) != 0) {
    return corrupt("engine header: magic at offset 0 is not 'VOXRTENG' (not a voxrt engine file)");
  }
  std::uint32_t version = 0, header_bytes = 0, section_count = 0, reserved = 0;
  std::uint64_t file_bytes = 0, checksum = 0;
  VOXRT_RETURN_IF_ERROR(header.get(version));
  if (version != kEngineFormatVersion) {
    return version_mismatch("engine header: format_version (offset 8) is ", version,
                            ", this runtime reads version ", kEngineFormatVersion,
                            "; rebuild the engine");
  }
  VOXRT_RETURN_IF_ERROR(header.get(header_bytes));
  if (header_bytes != kEngineHeaderBytes) {
    return corrupt("engine header: header_bytes (offset 12) is ", header_bytes, ", expected ",
                   kEngineHeaderBytes);
  }
  VOXRT_RETURN_IF_ERROR(header.get(file_bytes));
  if (file_bytes != size) {
    return corrupt("engine header: file_bytes (offset 16) says ", file_bytes,
                   " bytes but the file has ", size,
                   size < file_bytes ? " (truncated)" : " (trailing bytes)");
  }
  VOXRT_RETURN_IF_ERROR(header.get(checksum));
  const std::uint64_t actual = fnv1a64(image + kEngineHeaderBytes, size - kEngineHeaderBytes);
  if (actual != checksum) {
    return corrupt("engine header: checksum (offset 24) does not match the contents (stored ",
                   std::hex, checksum, ", computed ", actual, "): the file is corrupt");
  }
  VOXRT_RETURN_IF_ERROR(header.get(section_count));
  VOXRT_RETURN_IF_ERROR(header.get(reserved));
  if (section_count > 64)
    return corrupt("engine header: section_count ", section_count, " at offset 32");
  std::map<SectionId, std::pair<std::uint64_t, std::uint64_t>> table;
  for (std::uint32_t i = 0; i < section_count; ++i) {
    std::uint32_t id = 0, pad = 0;
    std::uint64_t offset = 0, bytes = 0;
    VOXRT_RETURN_IF_ERROR(header.get(id));
    VOXRT_RETURN_IF_ERROR(header.get(pad));
    VOXRT_RETURN_IF_ERROR(header.get(offset));
    VOXRT_RETURN_IF_ERROR(header.get(bytes));
    if (offset > size || bytes > size - offset) {
      return corrupt("engine section table: section ", id, " [", offset, ", +", bytes,
                     ") exceeds the file (", size, " bytes)");
    }
    table[static_cast<SectionId>(id)] = {offset,
                                         bytes};  // unknown ids are newer, optional sections
  }
  auto section = [&](SectionId id, const char* what) -> Expected<ByteReader> {
    auto it = table.find(id);
    if (it == table.end())
      return corrupt("engine file: required section '", what, "' (id ", int(id), ") is missing");
    return ByteReader(image + it->second.first, it->second.second, it->second.first,
                      str_cat("engine ", what));
  };

  EngineContents contents;
  {
    VOXRT_ASSIGN_OR_RETURN(ByteReader in, section(SectionId::kTarget, "target"));
    std::uint8_t device = 0, precision = 0;
    VOXRT_RETURN_IF_ERROR(in.get(device));
    VOXRT_RETURN_IF_ERROR(in.get(precision));
    if (device > 1) return corrupt("engine target: unknown device kind ", int(device));
    if (precision > 4) return corrupt("engine target: unknown precision ", int(precision));
    contents.target.device = static_cast<DeviceKind>(device);
    contents.target.precision = static_cast<Precision>(precision);
    VOXRT_RETURN_IF_ERROR(in.get_string(contents.target.fingerprint));
    VOXRT_RETURN_IF_ERROR(in.get_string(contents.target.builder_version));
  }
  {
    VOXRT_ASSIGN_OR_RETURN(ByteReader in, section(SectionId::kModel, "model"));
    VOXRT_RETURN_IF_ERROR(in.get(contents.model_hash));
  }
  {
    auto it = table.find(SectionId::kWeights);
    if (it == table.end()) return corrupt("engine file: required section 'weights' is missing");
    VOXRT_ASSIGN_OR_RETURN(ByteReader in, section(SectionId::kGraph, "graph"));
    contents.graph = std::make_unique<ir::Graph>();
    GraphReader reader{in, image + it->second.first, it->second.second, it->second.first,
                       keepalive};
    VOXRT_RETURN_IF_ERROR(reader.get_graph(*contents.graph, 0));
  }
  {
    VOXRT_ASSIGN_OR_RETURN(ByteReader in, section(SectionId::kProfiles, "profiles"));
    std::uint32_t n = 0;
    VOXRT_RETURN_IF_ERROR(in.get_count(n, 8));
    contents.profiles.resize(n);
    for (auto& p : contents.profiles) {
      VOXRT_RETURN_IF_ERROR(in.get_string(p.name));
      std::uint32_t m = 0;
      VOXRT_RETURN_IF_ERROR(in.get_count(m, 16));
      for (std::uint32_t i = 0; i < m; ++i) {
        std::string name;
        ShapeRange range;
        VOXRT_RETURN_IF_ERROR(in.get_string(name));
        VOXRT_RETURN_IF_ERROR(get_dims(in, range.min));
        VOXRT_RETURN_IF_ERROR(get_dims(in, range.opt));
        VOXRT_RETURN_IF_ERROR(get_dims(in, range.max));
        p.inputs[name] = std::move(range);
      }
    }
  }
  {
    VOXRT_ASSIGN_OR_RETURN(ByteReader in, section(SectionId::kStates, "states"));
    std::uint32_t n = 0;
    VOXRT_RETURN_IF_ERROR(in.get_count(n, 8));
    contents.states.resize(n);
    for (auto& s : contents.states) {
      VOXRT_RETURN_IF_ERROR(in.get_string(s.input));
      VOXRT_RETURN_IF_ERROR(in.get_string(s.output));
    }
  }
  {
    VOXRT_ASSIGN_OR_RETURN(ByteReader in, section(SectionId::kMemoryPlan, "memory plan"));
    auto& plan = contents.memory_plan;
    VOXRT_RETURN_IF_ERROR(in.get(plan.peak_bytes));
    VOXRT_RETURN_IF_ERROR(in.get(plan.unplanned_bytes));
    VOXRT_RETURN_IF_ERROR(in.get(plan.weights_bytes));
    std::uint32_t n = 0;
    VOXRT_RETURN_IF_ERROR(in.get_count(n, 12));
    plan.offsets.resize(n);
    for (auto& [name, offset] : plan.offsets) {
      VOXRT_RETURN_IF_ERROR(in.get_string(name));
      VOXRT_RETURN_IF_ERROR(in.get(offset));
    }
  }
  return contents;
}

}  // namespace voxrt::runtime
