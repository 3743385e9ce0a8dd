#!/usr/bin/env bash
# The library an Android app ships, for both ABIs android/build.gradle.kts
# builds, built and checked as far as a machine without the Android NDK can:
#   arm64-v8a  clang 19 with libc++ 19 (linked statically) and lld, the NDK
#              r28's toolchain (cmake/aarch64-linux-gnu-clang-libcxx.cmake);
#   x86_64     (the emulator's) clang 19 and lld, but with libstdc++ linked
#              statically: Debian's amd64 libc++ cannot be installed beside
#              the arm64 one (cmake/x86_64-linux-gnu-clang-app.cmake); at -O0,
#              as an app's debug build, and only compiled and linked.
# Both with VALET_LIBRARY_ONLY=ON and -Werror, only libvalet.so and
# libvalet_jni.so, the JNI glue compiled against Android's own jni.h (Debian's
# android-libnativehelper-dev), nlohmann-json reached through
# VALET_NLOHMANN_JSON_INCLUDE_DIR as the Gradle build passes it, and
# configured and built in a private mount namespace (unshare: as root, or in a
# user namespace) where no Python and no /usr/share/unicode can be seen, as on
# an app developer's machine. Then:
#   - every LOAD segment of both libraries of both ABIs is aligned to 16 KB
#     (Google Play's rule for Android 15+), read with readelf -lW;
#   - libvalet_jni.so needs libvalet.so by the name an APK keeps, and
#     neither needs a C++ library (it is linked in, as c++_static);
#   - the JNI glue asks for no JNI version above 1.6 (ART refuses 1.8);
#   - neither library holds test code (tests/package/library_symbols.sh);
#   - a C program dlopen()s the aarch64 libvalet.so under qemu-aarch64 and
#     finishes a task on stories260K (skipped without ../shared).
# Without the tools, or without a way to hide Python, it skips (or builds
# without hiding) with a message, except in CI (CI=true), where it fails.
# Usage: scripts/test-app-library.sh [BUILD_DIR_PREFIX]  (builds PREFIX-arm and PREFIX-x86)
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-$VALET_ROOT/build-app}"
sysroot=/usr/aarch64-linux-gnu
android_jni=/usr/include/android/nativehelper
# What android/build.gradle.kts passes by default on Debian.
nlohmann_dir=/usr/include

in_ci() { [ "${CI:-}" = "true" ]; }

hidden="${VALET_APP_HIDDEN:-0}"
if [ "$hidden" != 1 ]; then
  missing=()
  command -v clang-19 >/dev/null || missing+=(clang-19)
  command -v ld.lld-19 >/dev/null || missing+=(lld-19)
  [ -d "$sysroot/include/c++" ] || missing+=(g++-aarch64-linux-gnu)
  [ -f /usr/lib/aarch64-linux-gnu/libc++.a ] || missing+=(libc++-19-dev:arm64)
  [ -f "$(g++ -print-file-name=libstdc++.a 2>/dev/null)" ] || missing+=(g++)
  [ -f "$android_jni/jni.h" ] || missing+=(android-libnativehelper-dev)
  [ -f "$nlohmann_dir/nlohmann/json.hpp" ] || missing+=(nlohmann-json3-dev)
  command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
  if [ ${#missing[@]} -gt 0 ]; then
    if in_ci; then
      echo "app library: ${missing[*]} missing in CI (scripts/deps.sh installs them)" >&2
      exit 1
    fi
    echo "== app library checks SKIPPED: ${missing[*]} not installed (scripts/deps.sh installs them)"
    exit 0
  fi
  # Mounts made in a new mount namespace are seen by this script alone. The
  # PATH keeps the system's directories only, whose Pythons are hidden below.
  ns=(unshare --mount)
  [ "$(id -u)" -eq 0 ] || ns=(unshare --user --map-root-user --mount)
  if "${ns[@]}" true 2>/dev/null; then
    exec "${ns[@]}" env VALET_APP_HIDDEN=1 VALET_APP_OUTER_NS="$(readlink /proc/self/ns/mnt)" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash "$VALET_ROOT/scripts/test-app-library.sh" "$prefix"
  fi
  msg="cannot hide Python and /usr/share/unicode: '${ns[*]}' fails"
  msg+=" (it needs root or unprivileged user namespaces)"
  if in_ci; then echo "app library: $msg" >&2; exit 1; fi
  echo "== app library: $msg; building without hiding them"
fi

fail() { echo "app library: $*" >&2; exit 1; }

if [ "$hidden" = 1 ]; then
  # Set by the script itself only: anywhere else the mounts would be the machine's.
  outer_ns="${VALET_APP_OUTER_NS:-}"
  if [ -z "$outer_ns" ] || [ "$(readlink /proc/self/ns/mnt)" = "$outer_ns" ]; then
    fail "VALET_APP_HIDDEN=1 outside the mount namespace the script makes for itself"
  fi
  # An empty directory over the Unicode data, an empty (not executable) file
  # over every Python on the system's PATH (mounts follow the python3 link to
  # python3.11), pyenv's versions out of sight, then the proof: CMake's own
  # FindPython, from a throwaway project, must find nothing.
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  mkdir "$scratch/empty" "$scratch/probe"
  : >"$scratch/no-python"
  [ ! -d /usr/share/unicode ] || mount --bind "$scratch/empty" /usr/share/unicode
  shopt -s nullglob
  pythons=(/usr/local/bin/python* /usr/bin/python* /usr/local/sbin/python* /usr/sbin/python*)
  shopt -u nullglob
  for f in $( ((${#pythons[@]})) && readlink -f "${pythons[@]}" | sort -u); do
    mount --bind "$scratch/no-python" "$f"
  done
  pyenv_root="${PYENV_ROOT:-${HOME:-/nonexistent}/.pyenv}"
  [ ! -d "$pyenv_root" ] || mount --bind "$scratch/empty" "$pyenv_root"
  [ ! -e /usr/share/unicode/UnicodeData.txt ] || fail "/usr/share/unicode is still visible"
  if python3 -c '' 2>/dev/null || python -c '' 2>/dev/null; then fail "a Python still runs"; fi
  cat >"$scratch/probe/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(no_python_probe NONE)
find_package(Python3 COMPONENTS Interpreter)
find_package(Python COMPONENTS Interpreter)
find_program(any_python NAMES python3 python)
if(Python3_Interpreter_FOUND OR Python_Interpreter_FOUND OR any_python)
  message(FATAL_ERROR "a Python is visible: ${Python3_EXECUTABLE} ${Python_EXECUTABLE} ${any_python}")
endif()
EOF
  cmake -S "$scratch/probe" -B "$scratch/probe/build" >/dev/null ||
    fail "CMake still finds a Python where the app library is configured"
  echo "app library: configuring where neither Python nor /usr/share/unicode can be seen"
fi

build_abi() {  # build_abi DIR TOOLCHAIN_FILE CMAKE_ARG...
  local dir="$1" toolchain="$2"
  shift 2
  # A fresh configure each time: nothing cached from a run that could see more.
  rm -f "$dir/CMakeCache.txt"
  cmake -S "$VALET_ROOT" -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$VALET_ROOT/cmake/$toolchain" \
    -DVALET_LIBRARY_ONLY=ON -DVALET_JNI_INCLUDE_DIR="$android_jni" \
    -DVALET_NLOHMANN_JSON_INCLUDE_DIR="$nlohmann_dir" "$@" >/dev/null
  cmake --build "$dir" --target valet_shared valet_jni
}
build_abi "$prefix-arm" aarch64-linux-gnu-clang-libcxx.cmake -DCMAKE_BUILD_TYPE=Release
# x86_64 is what an app's debug variant runs on the emulator, and AGP builds
# that variant as CMake's Debug: here at -O0 without -g (which only slows the
# compile), since this library never runs and clang's warnings do not depend
# on optimization. That takes a third off its compile (CPU time 2m37s at -O3,
# 1m43s at -O0 on 2 cores), so this ABI adds under a minute to the stage.
build_abi "$prefix-x86" x86_64-linux-gnu-clang-app.cmake -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS_DEBUG=-O0

for build in "$prefix-arm" "$prefix-x86"; do
  for lib in "$build/src/lib/libvalet.so" "$build/bindings/java/libvalet_jni.so"; do
    # Align is the last column of each LOAD line; it must be a multiple of 16 KB.
    aligns=($(readelf -lW "$lib" | awk '$1 == "LOAD" { print $NF }'))
    [ ${#aligns[@]} -gt 0 ] || fail "$lib has no LOAD segment"
    for a in "${aligns[@]}"; do
      (( a >= 16384 && a % 16384 == 0 )) || fail "$lib has a LOAD segment aligned to $a, not 16 KB"
    done
    needed="$(readelf -dW "$lib" | awk '/NEEDED/ { gsub(/[][]/, "", $NF); print $NF }')"
    if grep -Eq '^lib(std)?c\+\+' <<<"$needed"; then fail "$lib needs a C++ library: $needed"; fi
  done
  readelf -dW "$build/bindings/java/libvalet_jni.so" | grep -q 'NEEDED.*\[libvalet\.so\]' ||
    fail "$build: libvalet_jni.so does not need libvalet.so by that name"
done
if grep -rEn 'JNI_VERSION_(1_[789]|[2-9]|1[0-9])' "$VALET_ROOT/bindings/java/src/main/cpp"; then
  fail "the JNI glue asks for a JNI version above 1.6, which ART refuses"
fi
for build in "$prefix-arm" "$prefix-x86"; do
  bash "$VALET_ROOT/tests/package/library_symbols.sh" "$build/src/lib/libvalet.so" \
    "$build/bindings/java/libvalet_jni.so" >/dev/null || fail "$build: test code in the app's libraries"
done
echo "app library: libvalet.so and libvalet_jni.so for aarch64 and x86_64: LOAD segments 16 KB aligned," \
  "JNI <= 1.6, no C++ library needed, no test code"

# The C program is plain C: it links no C++ library and none of valet's.
dlopen_test="$prefix-arm/capi_dlopen_test"
clang-19 --target=aarch64-linux-gnu -fuse-ld=lld -L"$sysroot/lib" -std=c11 -Wall -Wextra -Werror \
  -I"$VALET_ROOT/include" "$VALET_ROOT/tests/capi/dlopen_test.c" -o "$dlopen_test" -ldl
rc=0
qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$sysroot/lib" "$dlopen_test" \
  "$prefix-arm/src/lib/libvalet.so" "$VALET_ROOT/../shared/models/stories260K.gguf" || rc=$?
if [ "$rc" -eq 77 ]; then echo "app library: dlopen test SKIPPED (no ../shared)"; elif [ "$rc" -ne 0 ]; then exit "$rc"; fi
