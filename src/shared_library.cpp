// libvoxrt.so is made of the static layer libraries (src/CMakeLists.txt); a shared library needs
// a source of its own.
namespace voxrt {
int shared_library_anchor = 0;
}  // namespace voxrt
