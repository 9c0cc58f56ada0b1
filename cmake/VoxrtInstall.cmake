# `cmake --install` and the Debian package (docs/install.md). The layout:
#   bin/voxrt                               the command line
#   <libdir>/libvoxrt.so.*                  every voxrt layer (the C++ API of include/voxrt)
#   <libdir>/voxrt/libvoxrt_cuda.so         the CUDA backend plugin (when nvcc was found)
#   include/voxrt/*.h                       the public headers
#   <libdir>/cmake/voxrt/                   find_package(voxrt) -> target voxrt::voxrt
#   share/voxrt/models/default/             the default model, its metadata and card
#   share/doc/voxrt/                        README
include(CMakePackageConfigHelpers)

install(TARGETS voxrt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
set_target_properties(voxrt_shared PROPERTIES EXPORT_NAME voxrt)
install(TARGETS voxrt_shared EXPORT voxrtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/voxrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT runtime)
install(EXPORT voxrtTargets NAMESPACE voxrt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/voxrt
  COMPONENT runtime)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/voxrtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/voxrtConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/voxrt)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/voxrtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/voxrtConfig.cmake ${PROJECT_BINARY_DIR}/voxrtConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/voxrt COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/models/default/model.onnx
  ${PROJECT_SOURCE_DIR}/models/default/model.metadata.txt
  ${PROJECT_SOURCE_DIR}/models/default/MODEL_CARD.md
  DESTINATION ${CMAKE_INSTALL_DATADIR}/voxrt/models/default COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/samples/play_music.wav
  DESTINATION ${CMAKE_INSTALL_DATADIR}/voxrt/samples COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT runtime)
if(TARGET voxrt_cuda_plugin)
  install(TARGETS voxrt_cuda_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/voxrt
    COMPONENT cuda)
endif()

# cpack -G DEB (in the build folder): voxrt_<version>_<arch>.deb with the runtime component (its
# Depends from dpkg-shlibdeps: Debian 12's oneDNN, OpenBLAS, protobuf, onnx, ...), and
# voxrt-cuda_<version>_<arch>.deb with the plugin, which needs NVIDIA's CUDA 13 runtime (not a
# Debian package, so not a Depends: without it voxrt says so when a CUDA engine is asked for).
set(CPACK_PACKAGE_NAME voxrt)
set(CPACK_PACKAGE_VENDOR "voxrt")
set(CPACK_PACKAGE_CONTACT "voxrt maintainers <voxrt@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "streaming speech recognition engine and server")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime)
if(TARGET voxrt_cuda_plugin)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME voxrt)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION sound)
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME voxrt-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "voxrt (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION sound)
include(CPack)
