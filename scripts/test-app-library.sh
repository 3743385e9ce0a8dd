#!/usr/bin/env bash
# The library an Android app ships, built and checked as far as a machine
# without the Android NDK can: cross-built for aarch64 by clang 19 with
# libc++ 19 and lld (the NDK r28's toolchain; cmake/aarch64-linux-gnu-clang-
# libcxx.cmake) with VALET_LIBRARY_ONLY=ON, its JNI glue compiled against
# Android's own jni.h (Debian's android-libnativehelper-dev). Then:
#   - every LOAD segment of libvalet.so and libvalet_jni.so is aligned to
#     16 KB (Google Play's rule for Android 15+), read with readelf -lW;
#   - libvalet_jni.so needs libvalet.so by the name an APK keeps, and
#     neither needs a C++ library (libc++ is linked in, as c++_static);
#   - the JNI glue asks for no JNI version above 1.6 (ART refuses 1.8);
#   - a C program dlopen()s that libvalet.so under qemu-aarch64 and
#     finishes a task on stories260K (skipped without ../shared).
# Without the tools it skips with a message, except in CI (CI=true).
# Usage: scripts/test-app-library.sh [BUILD_DIR]
set -euo pipefail
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$VALET_ROOT/build-app-arm}"
sysroot=/usr/aarch64-linux-gnu
android_jni=/usr/include/android/nativehelper

missing=()
command -v clang-19 >/dev/null || missing+=(clang-19)
command -v ld.lld-19 >/dev/null || missing+=(lld-19)
[ -d "$sysroot/include/c++" ] || missing+=(g++-aarch64-linux-gnu)
[ -f /usr/lib/aarch64-linux-gnu/libc++.a ] || missing+=(libc++-19-dev:arm64)
[ -f "$android_jni/jni.h" ] || missing+=(android-libnativehelper-dev)
command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "app library: ${missing[*]} missing in CI (scripts/deps.sh installs them)" >&2
    exit 1
  fi
  echo "== app library checks SKIPPED: ${missing[*]} not installed (scripts/deps.sh installs them)"
  exit 0
fi

cmake -S "$VALET_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$VALET_ROOT/cmake/aarch64-linux-gnu-clang-libcxx.cmake" \
  -DVALET_LIBRARY_ONLY=ON -DVALET_JNI_INCLUDE_DIR="$android_jni" >/dev/null
cmake --build "$build"
libs=("$build/src/lib/libvalet.so" "$build/bindings/java/libvalet_jni.so")

fail() { echo "app library: $*" >&2; exit 1; }
for lib in "${libs[@]}"; do
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
  fail "libvalet_jni.so does not need libvalet.so by that name"
if grep -rEn 'JNI_VERSION_(1_[789]|[2-9]|1[0-9])' "$VALET_ROOT/bindings/java/src/main/cpp"; then
  fail "the JNI glue asks for a JNI version above 1.6, which ART refuses"
fi
echo "app library: libvalet.so and libvalet_jni.so for aarch64: LOAD segments 16 KB aligned, JNI <= 1.6, no C++ library needed"

# The C program is plain C: it links no C++ library and none of valet's.
dlopen_test="$build/capi_dlopen_test"
clang-19 --target=aarch64-linux-gnu -fuse-ld=lld -L"$sysroot/lib" -std=c11 -Wall -Wextra -Werror \
  -I"$VALET_ROOT/include" "$VALET_ROOT/tests/capi/dlopen_test.c" -o "$dlopen_test" -ldl
rc=0
qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$sysroot/lib" "$dlopen_test" "${libs[0]}" \
  "$VALET_ROOT/../shared/models/stories260K.gguf" || rc=$?
if [ "$rc" -eq 77 ]; then echo "app library: dlopen test SKIPPED (no ../shared)"; elif [ "$rc" -ne 0 ]; then exit "$rc"; fi
