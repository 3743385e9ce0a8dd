# Loaded through CMAKE_PROJECT_INCLUDE by scripts/test-x86-avx512.sh: the
# test binaries for the Bochs guest link statically, so every library must be
# found as its .a archive: pkg-config's lz4 through find_library, and zstd,
# whose CMake package names its shared library as zstd::libzstd_shared;
# defining both of its targets first, on the archive, makes the package keep
# them.
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
if(NOT TARGET zstd::libzstd_shared)
  find_library(VALET_ZSTD_STATIC NAMES libzstd.a REQUIRED)
  foreach(t zstd::libzstd_shared zstd::libzstd_static)
    add_library(${t} STATIC IMPORTED GLOBAL)
    set_target_properties(${t} PROPERTIES IMPORTED_LOCATION "${VALET_ZSTD_STATIC}"
                                          INTERFACE_INCLUDE_DIRECTORIES "/usr/include")
  endforeach()
endif()
