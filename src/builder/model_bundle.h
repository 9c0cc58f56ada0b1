// A model bundle: the ONNX file plus, beside it, `<name>.metadata.txt` with KEY=VALUE lines that
// voxrt build adds to the engine metadata over the ONNX file's own metadata_props (and under
// --metadata). It holds what was measured or tuned after export (the LM weight that suits the
// model, its emission delays) without rewriting a large ONNX file (docs/model_contract.md).
#pragma once

#include <map>
#include <string>

#include "voxrt/status.h"

namespace voxrt::builder {

// `<onnx path without .onnx>.metadata.txt`.
std::string bundle_metadata_path(const std::string& onnx_path);

// Reads the bundle's metadata file into `metadata` (overwriting keys it names). A missing file is
// not an error: `found` says whether there was one. Blank lines and lines starting with '#' are
// skipped; any other line must be KEY=VALUE with a non-empty key (errors give file:line).
Status read_bundle_metadata(const std::string& onnx_path,
                            std::map<std::string, std::string>& metadata, bool& found);

}  // namespace voxrt::builder
