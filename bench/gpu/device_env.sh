# Sourced by the scripts that run on the GPU machine (bench/gpu/device_run.sh,
# bench/server/gpu_streams.sh): unpacks .device/bundle.tar.xz (scripts/pack-for-device.sh) into
# $dev (again when the bundle is newer) and puts its libraries, the device's own CUDA 13 runtime and
# cuDNN 9 on LD_LIBRARY_PATH.
dev=/tmp/voxrt_device
if [ ! -f "$dev/.unpacked" ] || [ .device/bundle.tar.xz -nt "$dev/.unpacked" ]; then
  rm -rf "$dev" && mkdir -p "$dev" && tar -xJf .device/bundle.tar.xz -C "$dev" && touch "$dev/.unpacked"
fi
# The CUDA 13 runtime libraries from the device's own install (toolkit first, then pip wheels);
# NVRTC (dlopened) compiles FusedPointwise kernels when an engine is built there.
cuda_dirs=$(for f in $(find -H /usr/local/cuda/lib64 /usr/local/cuda/targets /usr/local /opt \
    -maxdepth 10 \( -name 'libcublasLt.so.13*' -o -name 'libcudart.so.13*' -o -name 'libcudnn.so.9*' \
    -o -name 'libnvrtc.so.13*' \) 2>/dev/null); do
  dirname "$f"; done | awk '!seen[$0]++' | paste -sd:)
# cuDNN (dlopened by the CUDA backend's conv tactics) from PyTorch's wheel when not found above.
if [[ $cuda_dirs != *cudnn* ]]; then
  cudnn_dir=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$cudnn_dir" ] && cuda_dirs="$cuda_dirs:$cudnn_dir"
fi
export LD_LIBRARY_PATH="$dev/lib:${cuda_dirs}:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
