# Cross build for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu, whose
# target libraries (zstd, lz4, GoogleTest) come from Debian's arm64 packages
# installed side by side (multiarch, scripts/deps.sh). Test binaries run under
# qemu-aarch64; scripts/test.sh picks the emulated CPU.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)

# Build tools (pkg-config) are the host's; libraries, headers and packages
# are the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
