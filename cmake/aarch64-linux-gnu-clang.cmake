# The aarch64 cross build of aarch64-linux-gnu.cmake with clang-19 and lld-19
# in place of g++: the compiler of the Android NDK, whose target regions
# (kernels/simd_target.h) differ from GCC's. Clang finds Debian's cross GCC by
# itself and takes its libstdc++ and glibc headers from /usr/aarch64-linux-gnu.
include(${CMAKE_CURRENT_LIST_DIR}/aarch64-linux-gnu.cmake)

set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
# Clang searches the multiarch libc6:arm64 before the cross glibc, g++ the
# other way round; the tests run on the cross glibc (scripts/test-aarch64.sh),
# so they link against it too.
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-fuse-ld=lld -L/usr/aarch64-linux-gnu/lib")
endforeach()
