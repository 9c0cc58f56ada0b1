// The CPU backend: the embedded default and the fallback for every op. One explicit table maps
// op families to their kernels (registry.cpp); no static self-registration (STYLE.md 6).
#pragma once

#include "backends/kernel.h"

#define VOXRT_AVX2 __attribute__((target("avx2,fma")))
#define VOXRT_AVX512 __attribute__((target("avx512f,avx2,fma")))
// The default build targets baseline x86-64 (SSE2); loops that the compiler vectorizes also get
// an AVX-512 (x86-64-v4) and an AVX2+FMA (haswell) clone picked at load time, so a portable
// build still runs at the CPU's vector width.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(VOXRT_NO_MULTIVERSION)
#define VOXRT_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=haswell", "default")))
#else
#define VOXRT_MULTIVERSION
#endif

namespace voxrt::backends::cpu {

// Tactics that can run `node` with its input dtypes and attributes; empty = unsupported.
// The reference tactic comes first.
std::vector<TacticInfo> tactics_for(const ir::Node& node);
bool supports(const ir::Node& node);
// A kernel for `node` using `tactic`; error when that tactic cannot run it.
Expected<std::unique_ptr<Kernel>> create_kernel(const ir::Node& node, TacticId tactic);
// Whether `node` has CPU kernels that run it at fp16 (--precision fp16 on the CPU): GRU, LSTM
// and RNN with f32 tensors, whose R is then stored in FP16 (arithmetic stays FP32). Every other
// layer runs in fp32 on the CPU.
bool supports_fp16(const ir::Node& node);
// What `node` run with `tactic` on inputs of `input_dims` keeps outside the engine's memory plan
// (per-thread scratch), in words, for voxrt inspect; empty when nothing worth saying. Attention
// says how much of the score matrix a tactic holds.
std::string scratch_note(const ir::Node& node, TacticId tactic, std::span<const Dims> input_dims);
// Size of the CPU's last-level cache (sysfs; 32 MiB when it cannot be read).
std::int64_t last_level_cache_bytes();
// How many bytes of a model's weights stay cached from one run to the next, for the tuner's
// choice of timing dense layers cold: the last-level cache, but at most 32 MiB. A virtual machine
// reports its host's whole L3 (480 MiB on the Xeon VM of docs/perf/transformer_cpu.md, run of
// 2026-12-07), shared with the host's other cores and tenants; there one thread read 16 MiB at 17
// GB/s, 74 MiB at 9.5 GB/s, but 2 MiB (its L2) at 39 GB/s (bench/cpu/memory_bandwidth), so a
// 74 MB model streams its weights from memory every run although the L3 reported would hold them.
std::int64_t weight_cache_bytes();
// "AVX-512 VNNI ..." summary of the CPU, for the engine fingerprint.
std::string cpu_fingerprint();
// Whether this CPU runs AVX2 and FMA (once per process). The library is built for baseline
// x86-64: a function marked VOXRT_AVX2 is only called after this said yes.
bool cpu_has_avx2_fma();
// Whether this CPU runs AVX-512F (besides AVX2/FMA); a function marked VOXRT_AVX512 is only called
// after this said yes. VOXRT_CPU_AVX512=0 says no, to time or test the AVX2 code on such a CPU.
bool cpu_has_avx512f();

// One pair per op family (one translation unit per family; STYLE.md 5).
std::vector<TacticInfo> elementwise_tactics(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_elementwise_kernel(const ir::Node& node, TacticId tactic);
std::vector<TacticInfo> reduction_tactics(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_reduction_kernel(const ir::Node& node, TacticId tactic);
std::vector<TacticInfo> data_movement_tactics(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_data_movement_kernel(const ir::Node& node, TacticId tactic);
std::vector<TacticInfo> pooling_tactics(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_pooling_kernel(const ir::Node& node, TacticId tactic);
std::vector<TacticInfo> dense_tactics(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_dense_kernel(const ir::Node& node, TacticId tactic);
std::vector<TacticInfo> recurrent_tactics(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_recurrent_kernel(const ir::Node& node, TacticId tactic);
bool recurrent_fp16_available(const ir::Node& node);
std::vector<TacticInfo> attention_tactics(const ir::Node& node);
std::string attention_scratch_note(const ir::Node& node, TacticId tactic,
                                   std::span<const Dims> input_dims);
Expected<std::unique_ptr<Kernel>> make_attention_kernel(const ir::Node& node, TacticId tactic);

}  // namespace voxrt::backends::cpu
