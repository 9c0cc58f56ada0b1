#include <sstream>

#include "backends/device_backend.h"
#include "runtime/device_plugin.h"
#include "voxrt/builder.h"

namespace voxrt {

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

Expected<Precision> precision_from_name(std::string_view name) {
  for (Precision p :
       {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16, Precision::kInt8}) {
    if (precision_name(p) == name) return p;
  }
  return invalid_argument("precision '", name, "': expected one of fp32, tf32, fp16, bf16, int8");
}

Status BuilderConfig::validate() const {
  // The CPU backend: fp32, fp16 (recurrent layers store R in FP16, arithmetic stays FP32;
  // every other layer runs in fp32) or int8 (calibrated dense and recurrent layers).
  const auto cpu_can_run = [](Precision p) {
    return p == Precision::kFp32 || p == Precision::kFp16 || p == Precision::kInt8;
  };
  if (device == DeviceKind::kCpu && !cpu_can_run(precision)) {
    return unsupported("precision ", precision_name(precision),
                       " is not available on the CPU backend (fp32; fp16: recurrent weights "
                       "stored in FP16; int8: calibrated); use --device cuda for tf32/bf16");
  }
  if (device == DeviceKind::kCuda) {
    if (auto backend = runtime::load_device_backend(DeviceKind::kCuda); !backend) {
      return unsupported("--device cuda: ", backend.status().message(),
                         "; build with --device cpu");
    }
  }
  for (const auto& [layer, layer_precision] : layer_precisions) {
    if (layer.empty()) return invalid_argument("layer precision with an empty layer name");
    if (device == DeviceKind::kCpu && !cpu_can_run(layer_precision)) {
      return unsupported("layer '", layer, "' at ", precision_name(layer_precision),
                         ": the CPU backend runs layers in fp32, fp16 (recurrent weights) or int8");
    }
  }
  if (int8.percentile <= 50 || int8.percentile > 100) {
    return invalid_argument("int8 percentile calibrator: expected a percentile in (50, 100], got ",
                            int8.percentile);
  }
  if (int8.max_output_error < 0 || int8.sensitivity_streams < 0) {
    return invalid_argument("int8: max_output_error and sensitivity_streams must be >= 0");
  }
  if (threads < 1 || threads > 256)
    return invalid_argument("threads must be 1..256, got ", threads);
  if (timing_iterations < 1)
    return invalid_argument("timing_iterations must be at least 1, got ", timing_iterations);
  for (const auto& profile : profiles) {
    for (const auto& [name, range] : profile.inputs) {
      if (range.min.size() != range.opt.size() || range.opt.size() != range.max.size()) {
        return invalid_argument("profile '", profile.name, "' input '", name,
                                "': min/opt/max ranks differ (", dims_to_string(range.min), " / ",
                                dims_to_string(range.opt), " / ", dims_to_string(range.max), ")");
      }
      for (std::size_t d = 0; d < range.min.size(); ++d) {
        if (range.min[d] < 0 || range.min[d] > range.opt[d] || range.opt[d] > range.max[d]) {
          return invalid_argument("profile '", profile.name, "' input '", name, "' dim ", d,
                                  ": need 0 <= min <= opt <= max, got ", range.min[d], " / ",
                                  range.opt[d], " / ", range.max[d]);
        }
      }
    }
  }
  for (const auto& s : states) {
    if (s.input.empty() || s.output.empty())
      return invalid_argument("state pair '", s.input, ":", s.output, "' has an empty name");
  }
  return Status::ok();
}

std::string BuilderConfig::describe() const {
  std::ostringstream out;
  out << "device=" << (device == DeviceKind::kCpu ? "cpu" : "cuda")
      << " precision=" << precision_name(precision) << " threads=" << threads
      << " autotune=" << (autotune ? "on" : "off") << " workspace=" << (workspace_limit_bytes >> 20)
      << "MiB";
  if (!timing_cache_path.empty()) out << " timing_cache=" << timing_cache_path;
  if (precision == Precision::kInt8 || int8.data || !int8.cache_path.empty()) {
    out << " calibrator=" << calibrator_name(int8.calibrator);
    if (int8.calibrator == Calibrator::kPercentile) out << "(" << int8.percentile << ")";
    if (int8.data) out << " calibration_data={" << int8.data->describe() << "}";
    if (!int8.cache_path.empty()) out << " calibration_cache=" << int8.cache_path;
    if (int8.max_output_error > 0) out << " max_output_error=" << int8.max_output_error;
  }
  for (const auto& [layer, layer_precision] : layer_precisions)
    out << " layer_precision=" << layer << ":" << precision_name(layer_precision);
  for (const auto& p : profiles) {
    out << " profile[" << p.name << "]{";
    bool first = true;
    for (const auto& [name, r] : p.inputs) {
      out << (first ? "" : " ") << name << ":" << dims_to_string(r.min) << "/"
          << dims_to_string(r.opt) << "/" << dims_to_string(r.max);
      first = false;
    }
    out << "}";
  }
  for (const auto& s : states) out << " state=" << s.input << ":" << s.output;
  return out.str();
}

}  // namespace voxrt
