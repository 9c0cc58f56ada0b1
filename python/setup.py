"""Builds voxrt's extension module with the project's CMake (the release preset's settings) and
puts it into the wheel beside the pure-Python files.

VOXRT_BUILD_DIR=DIR reuses a configured build folder (e.g. the repository's build/) instead of
a fresh one under build/pip; VOXRT_CMAKE_ARGS adds configure arguments (e.g. -DVOXRT_CUDA=OFF).
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(os.environ.get("VOXRT_BUILD_DIR", SOURCE_ROOT / "build" / "pip")).resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            configure = ["cmake", "-S", str(SOURCE_ROOT), "-B", str(build_dir), "-G", "Ninja",
                         "-DCMAKE_BUILD_TYPE=Release", "-DVOXRT_TESTS=OFF",
                         f"-DPYTHON_EXECUTABLE={sys.executable}"]
            configure += shlex.split(os.environ.get("VOXRT_CMAKE_ARGS", ""))
            subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        targets = ["_voxrt"]
        # The CUDA backend plugin, where the build has one (nvcc found).
        listed = subprocess.run(["cmake", "--build", str(build_dir), "--target", "help"],
                                check=True, capture_output=True, text=True).stdout
        if "voxrt_cuda_plugin" in listed:
            targets.append("voxrt_cuda_plugin")
        subprocess.run(["cmake", "--build", str(build_dir), "--target", *targets, "-j", jobs],
                       check=True)
        built = next((build_dir / "python" / "voxrt").glob("_voxrt*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(built), str(target))
        # The module links libvoxrt.so (found beside it: its RPATH starts with $ORIGIN); the
        # plugin, when built, is opened from the same folder.
        lib = build_dir / "lib"
        sonames = [p for p in lib.glob("libvoxrt.so.*") if p.name.count(".") == 3]
        if not sonames:
            raise RuntimeError(f"libvoxrt.so.MAJOR.MINOR not found in {lib}")
        for library in sonames + list(lib.glob("libvoxrt_cuda.so")):
            self.copy_file(str(library.resolve()), str(target.parent / library.name))


setup(ext_modules=[CMakeExtension("voxrt._voxrt")], cmdclass={"build_ext": CMakeBuild})
