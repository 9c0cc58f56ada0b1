#!/usr/bin/env bash
# scripts/pack-for-device.sh [BUILD_DIR]: copies what bench/gpu/device_run.sh needs onto the GPU
# machine into the ignored folder .device/ (carry it with the device call):
#   .device/bundle.tar.xz  bin/ (voxrt, the gpu test binary and node_conformance, stripped;
#                     transducer_bench and server_model_lifecycle when built),
#                     tests/lifecycle_work (the lifecycle test's speech clips, with it),
#                     lib/libvoxrt_cuda.so (the CUDA plugin voxrt opens),
#                     data/node (ONNX's node tests, for node_conformance --device cuda),
#                     data/models (two openWakeWord models for a gpu test) and lib/ (every
#                     non-system shared library they load: protobuf, onnx, dnnl, openblas,
#                     sndfile, soxr, sentencepiece, ...), xz-compressed (the working tree that
#                     travels already holds ~35 MiB; the limit is 64 MiB).
# Left out on purpose: glibc, libstdc++/libgcc_s (the device image's are newer), the NVIDIA
# driver (libcuda, libnvidia-*) and the CUDA 13 runtime libraries (cudart, cublas, cublasLt,
# nvrtc, cudnn), which the device's own CUDA 13.0 install provides.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-cuda}
out=$root/.device
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
bins=("$build/bin/voxrt" "$build/tests/gpu/gpu_cuda_backend" "$build/tests/conformance/node_conformance")
for b in "${bins[@]}"; do
  [[ -x $b ]] || { echo "missing $b: build it first (cmake --build $build --target voxrt gpu_cuda_backend node_conformance)" >&2; exit 1; }
  cp "$b" "$out/bin/"
done
# The CUDA plugin is opened with dlopen (ldd does not list it): it goes into lib/, where voxrt
# looks for it beside libvoxrt.so, and its libraries with it.
plugin="$build/lib/libvoxrt_cuda.so"
[[ -f $plugin ]] || { echo "missing $plugin: build it first (cmake --build $build --target voxrt_cuda_plugin)" >&2; exit 1; }
cp "$plugin" "$out/lib/"
# The transducer benchmark (bench/transducer/run.sh) when it was built: optional.
if [[ -x $build/bin/transducer_bench ]]; then
  cp "$build/bin/transducer_bench" "$out/bin/"
  bins+=("$build/bin/transducer_bench")
fi
# The model lifecycle test when it was built: optional. Its reload cycles on CUDA engines run
# there (docs/model_repository.md). Its speech clips are spoken by espeak-ng, which the GPU
# machine lacks: they come from a build where the test ran here (this one, else build/), into
# tests/lifecycle_work/, where the test finds them when VOXRT_BINARY_DIR is the unpacked bundle.
lifecycle=$build/tests/server/server_model_lifecycle
if [[ -x $lifecycle ]]; then
  clips=""
  for dir in "$build/tests/lifecycle_work" "$root/build/tests/lifecycle_work"; do
    if [[ -f $dir/joined.wav ]] && ls "$dir"/speech[0-3].wav > /dev/null 2>&1; then clips=$dir; break; fi
  done
  if [[ -z $clips ]]; then
    echo "missing the lifecycle test's speech clips (speech0-3.wav, joined.wav) in $build/tests/lifecycle_work and $root/build/tests/lifecycle_work: run ctest -R server_model_lifecycle in one of them first" >&2
    exit 1
  fi
  cp "$lifecycle" "$out/bin/"
  bins+=("$lifecycle")
  mkdir -p "$out/tests/lifecycle_work"
  cp "$clips"/speech[0-3].wav "$clips/joined.wav" "$out/tests/lifecycle_work/"
fi
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia|libcudart|libcublas|libcublasLt|libnvrtc|libcudnn|libnvJitLink)'
for b in "${bins[@]}" "$plugin"; do
  ldd "$b" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    if [[ $name =~ $skip ]]; then continue; fi
    cp -L -n "$path" "$out/lib/$name"
  done
done
strip --strip-unneeded "$out"/lib/*.so* 2>/dev/null || true
strip --strip-unneeded "$out"/bin/* 2>/dev/null || true
du -sh "$out"/bin/* "$out/lib"
# ONNX's node tests (Debian libonnx-testdata, ~1.2 MB compressed), for node_conformance --device
# cuda there (the device machine has no apt).
mkdir -p "$out/data"
cp -r /usr/share/libonnx-testdata/data/node "$out/data/node"
# The openWakeWord melspectrogram and embedding models for the gpu test
# CudaModels.OpenWakeWordModelsMatchCpu (fetched by scripts/fetch-third-party.sh; CC BY-NC-SA,
# tests only), when they are here.
for m in melspectrogram.onnx embedding_model.onnx; do
  if [[ -f $root/.third_party/models/$m ]]; then
    mkdir -p "$out/data/models" && cp "$root/.third_party/models/$m" "$out/data/models/"
  fi
done
# The Transformer-era exports of tests/models (small, random weights) for the gpu tests
# CudaTransformerModels.* (they compare the CUDA engine with the CPU one), exported here with
# Debian's torch: the GPU machine's torch is another version.
mkdir -p "$out/data/models/transformer"
/usr/bin/python3 "$root/tests/models/export_transformer_models.py" "$out/data/models/transformer" \
  > "$out/data/models/transformer/export.log" 2>&1 || echo "warning: the transformer exports failed (see $out/data/models/transformer/export.log)" >&2
# The reference model code the Transformer benchmark exports on the device (bench/gpu/bench_transformer.py).
if [[ -f $root/../shared/bench/torch_transformer_baseline.py ]]; then
  mkdir -p "$out/shared/bench" && cp "$root/../shared/bench/torch_transformer_baseline.py" "$out/shared/bench/"
fi
parts=(bin lib data)
[[ -d $out/tests ]] && parts+=(tests)
(cd "$out" && XZ_OPT=-9 tar -cJf bundle.tar.xz "${parts[@]}" && rm -rf "${parts[@]}")
echo "packed into $out:"
du -sh "$out/bundle.tar.xz"
