# One build shape for every voxrt target: the same warnings, sanitizers and include layout.

# -Wno-restrict: GCC 12 reports false positives inside std::string (GCC bug 105329).
set(VOXRT_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-unused-parameter
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
if(VOXRT_WERROR)
  list(APPEND VOXRT_WARNINGS -Werror)
endif()

if(VOXRT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # GCC's -fsanitize instrumentation makes -Wmaybe-uninitialized fire inside libstdc++ headers
  # (<regex>, <functional>); the GCC manual warns of such false positives. The release build
  # keeps the warning as an error.
  add_compile_options($<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  add_link_options(-fsanitize=address,undefined)
endif()

if(VOXRT_TSAN)
  # VOXRT_NO_MULTIVERSION: a target_clones resolver runs while the dynamic loader relocates the
  # program, before TSan's runtime is up, and TSan's instrumentation of it crashed every binary
  # at load (__tsan_func_entry from reduce_rows_f32_sum's resolver).
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_compile_definitions(VOXRT_NO_MULTIVERSION)
  add_link_options(-fsanitize=thread)
endif()

# voxrt_library(NAME DIR <dir> [DEPS ...]): a static library from every .cpp in DIR (recursively),
# so adding a file to a layer never needs a CMake edit.
function(voxrt_library name)
  cmake_parse_arguments(ARG "" "DIR" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${ARG_DIR}/*.cpp)
  if(NOT sources)
    # A layer whose first file has not landed yet still gets a (empty) library.
    set(empty ${CMAKE_CURRENT_BINARY_DIR}/${name}_empty.cpp)
    file(WRITE ${empty} "// ${name} has no sources yet\n")
    set(sources ${empty})
  endif()
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${VOXRT_WARNINGS}>)
  if(VOXRT_NATIVE)
    target_compile_options(${name} PRIVATE -march=native)
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# voxrt_test(NAME SOURCES ... LABELS ... DEPS ...): one gtest binary, registered with ctest.
function(voxrt_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LABELS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${VOXRT_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  if("unit" IN_LIST ARG_LABELS)
    # The sanitizer job builds only these.
    add_dependencies(voxrt_unit_tests ${name})
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}"
    ENVIRONMENT "VOXRT_SOURCE_DIR=${PROJECT_SOURCE_DIR};VOXRT_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()

# voxrt_embed_web_assets(TARGET DIR): compiles every page file of DIR (html, js, css, svg, png)
# into TARGET, as the table server/web_assets.h declares; regenerated when a file changes.
function(voxrt_embed_web_assets target dir)
  file(GLOB files CONFIGURE_DEPENDS ${dir}/*)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${target}_web_assets.cpp)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -P ${PROJECT_SOURCE_DIR}/cmake/web_assets_to_cpp.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/web_assets_to_cpp.cmake
    COMMENT "Embedding the live page (${dir})")
  target_sources(${target} PRIVATE ${out})
endfunction()
