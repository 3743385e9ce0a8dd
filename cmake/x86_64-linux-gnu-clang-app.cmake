# The app-side library for x86_64, Android's emulator ABI, built as close to
# the NDK r28 as this machine allows: clang 19 and lld, with the NDK's search
# rules (ndk-like-search.cmake), but glibc's headers for bionic's and
# libstdc++ for libc++, linked statically as the NDK's c++_static is. Debian's
# amd64 libc++-19-dev cannot be installed beside the arm64 one the aarch64
# build takes (both own /usr/lib/llvm-19/lib/libc++.a, which differs), so code
# that only libstdc++ accepts fails on aarch64 alone.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET x86_64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET x86_64-linux-gnu)
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-fuse-ld=lld -static-libstdc++")
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/ndk-like-search.cmake)
