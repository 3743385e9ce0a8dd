# Included by the app-library toolchains (scripts/test-app-library.sh): as the
# NDK's toolchain does, the target's headers, libraries and CMake packages are
# looked for only under a sysroot, here one that does not exist, so the build
# reaches nlohmann-json only through VALET_NLOHMANN_JSON_INCLUDE_DIR, the way
# an app's Gradle build must. Programs (javac) are still the host's.
set(CMAKE_FIND_ROOT_PATH ${CMAKE_CURRENT_LIST_DIR}/no-such-sysroot)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
