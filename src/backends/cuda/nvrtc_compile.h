// Run-time compilation of generated CUDA C++ (NVRTC) to machine code for one SM, at engine build
// time. NVRTC is loaded with dlopen (libnvrtc.so.13) the first time it is needed, not linked: an
// engine carries its compiled code, so loading and running engines never needs NVRTC, and neither
// does a machine that only runs them. NVRTC needs no GPU, so code generation is tested anywhere
// the toolkit is installed.
#pragma once

#include <string>

#include "voxrt/status.h"

namespace voxrt::backends::cuda {

// Compiles `source` (named `program_name` in NVRTC's log) to a CUBIN for compute capability
// `sm` (90 = sm_90). An error carries NVRTC's compile log; an unavailable NVRTC says how to get it.
Expected<std::string> nvrtc_compile_cubin(const std::string& source,
                                          const std::string& program_name, int sm);

// "nvrtc=13.0", or "nvrtc=none" when the library cannot be loaded.
std::string nvrtc_fingerprint();

}  // namespace voxrt::backends::cuda
