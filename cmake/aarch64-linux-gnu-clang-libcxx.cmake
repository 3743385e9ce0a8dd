# aarch64-linux-gnu-clang.cmake with LLVM's libc++ 19 (Debian's
# libc++-19-dev:arm64) in place of libstdc++, linked statically: the Android
# NDK r28's compiler, C++ library and linker, so code that only libstdc++
# accepts fails here as it would in an app's build. Used for the app-side
# library (scripts/test-app-library.sh), which exports only C.
include(${CMAKE_CURRENT_LIST_DIR}/aarch64-linux-gnu-clang.cmake)

set(CMAKE_CXX_FLAGS_INIT "-stdlib=libc++")
foreach(kind EXE SHARED MODULE)
  string(APPEND CMAKE_${kind}_LINKER_FLAGS_INIT " -stdlib=libc++ -static-libstdc++")
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/ndk-like-search.cmake)
