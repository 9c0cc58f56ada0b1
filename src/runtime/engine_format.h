// The engine file (docs/engine_format.md). Header, section table, sections, then nothing: the
// checksum in the header covers every byte after the header. Section ids and the graph encoding
// only grow (STYLE.md 7); the loader names the field or offset it refuses.
//
//   offset 0   magic "VOXRTENG"                      8 bytes
//          8   format_version (u32)                  kEngineFormatVersion
//         12   header_bytes (u32)                    size of this header
//         16   file_bytes (u64)                      whole file
//         24   checksum (u64)                        fnv1a64 of bytes [header_bytes, file_bytes)
//         32   section_count (u32), reserved (u32)
//         40   section table: {id u32, reserved u32, offset u64, bytes u64} x section_count
//   sections, each 64-byte aligned (weights are mmap-ed in place)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/builder.h"

namespace voxrt::runtime {

inline constexpr char kEngineMagic[8] = {'V', 'O', 'X', 'R', 'T', 'E', 'N', 'G'};
inline constexpr std::uint32_t kEngineFormatVersion = 1;
inline constexpr std::uint32_t kEngineHeaderBytes = 40;
inline constexpr char kBuilderVersion[] = "voxrt-builder 0.1.0";

enum class SectionId : std::uint32_t {
  kTarget = 1,      // device kind, fingerprint, builder version
  kModel = 2,       // model hash, model metadata
  kGraph = 3,       // IR graph with chosen tactics (node attributes voxrt.tactic*)
  kWeights = 4,     // constant tensors, 64-byte aligned
  kProfiles = 5,    // optimization profiles
  kStates = 6,      // streaming state pairs
  kMemoryPlan = 7,  // liveness-based plan at the opt shapes
};

// Where the build chose what; reported by `voxrt inspect`.
struct LayerRecord {
  std::string name;
  std::string op;
  std::vector<std::string> origin;
  std::string tactic;
  double time_us = 0;  // measured at the first profile's opt shape; 0 if not timed
};

struct MemoryPlanRecord {
  std::uint64_t peak_bytes = 0;       // liveness-planned arena at the opt shapes
  std::uint64_t unplanned_bytes = 0;  // sum of all intermediates, for comparison
  std::uint64_t weights_bytes = 0;
  std::vector<std::pair<std::string, std::uint64_t>> offsets;  // value -> arena offset
};

struct TargetRecord {
  DeviceKind device = DeviceKind::kCpu;
  std::string fingerprint;
  std::string builder_version = kBuilderVersion;
  Precision precision = Precision::kFp32;
};

struct EngineContents {
  TargetRecord target;
  std::uint64_t model_hash = 0;
  std::unique_ptr<ir::Graph> graph;
  std::vector<OptimizationProfile> profiles;
  std::vector<StatePair> states;
  MemoryPlanRecord memory_plan;
};

// Serializes; weights are copied into the file.
Expected<std::string> serialize_engine(const EngineContents& contents);
// Parses a whole file image; constants become views into `image`, kept alive by `keepalive`.
Expected<EngineContents> deserialize_engine(const char* image, std::size_t size,
                                            std::shared_ptr<void> keepalive);

// Node attribute names the builder uses to record its choices.
inline constexpr char kTacticAttr[] = "voxrt.tactic";
inline constexpr char kTacticNameAttr[] = "voxrt.tactic_name";
// What the chosen kernel keeps outside the memory plan at the opt shapes, in words (inspect).
inline constexpr char kScratchNoteAttr[] = "voxrt.scratch";
inline constexpr char kTimeUsAttr[] = "voxrt.time_us";
// Engines with several optimization profiles: the tactic chosen at each profile's opt shapes
// (index = profile; voxrt.tactic above is profile 0's), their names and times. Absent: every
// profile runs voxrt.tactic.
inline constexpr char kProfileTacticsAttr[] = "voxrt.profile_tactics";
inline constexpr char kProfileTacticNamesAttr[] = "voxrt.profile_tactic_names";
inline constexpr char kProfileTimesUsAttr[] = "voxrt.profile_times_us";

// The tactic recorded for `node` at optimization profile `profile` (-1: none recorded).
inline std::int64_t recorded_tactic(const ir::Node& node, int profile) {
  const std::vector<std::int64_t> per_profile = node.attrs.get_ints(kProfileTacticsAttr);
  if (profile >= 0 && static_cast<std::size_t>(profile) < per_profile.size())
    return per_profile[static_cast<std::size_t>(profile)];
  return node.attrs.get_int(kTacticAttr, -1);
}

}  // namespace voxrt::runtime
