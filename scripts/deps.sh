#!/usr/bin/env bash
# Installs the Debian packages valet needs, only those that are missing.
# Sourced by build.sh (valet_install_deps: building and running) and test.sh
# (valet_install_test_deps: that plus the test-only toolchains); safe to run
# any number of times.
set -euo pipefail

# What `scripts/build.sh` needs to build valet and run it.
VALET_PACKAGES=(g++ cmake ninja-build pkg-config libzstd-dev liblz4-dev libopenblas-dev libcpp-httplib-dev
  nlohmann-json3-dev)
# What the test suite adds (scripts/test.sh): Python and the Unicode data (the
# soaks, and the check that the committed Unicode tables are current);
# GoogleTest and Google Benchmark;
# clang 19 with lld and its sanitizer runtimes (the sanitizer, fuzzing and
# aarch64 stages build with it); the aarch64 cross sysroot (Debian's cross
# g++ and the target's libraries as arm64 packages) with qemu to run it;
# for the app-side library, the NDK's C++ library (libc++ 19; only its arm64
# build, which cannot be installed beside an amd64 one, so the x86_64 one
# links libstdc++) and Android's own jni.h; the JDK with JUnit 5 for the Java
# binding; and llvm-19 for llvm-mca-19 and llvm-cxxfilt-19 (scripts/arm-mca.sh).
VALET_TEST_PACKAGES=(python3 unicode-data libgtest-dev libbenchmark-dev
  clang-19 lld-19 libclang-rt-19-dev llvm-19
  g++-aarch64-linux-gnu qemu-user libzstd-dev:arm64 liblz4-dev:arm64 libgtest-dev:arm64
  libc++-19-dev:arm64 libc++abi-19-dev:arm64 android-libnativehelper-dev
  openjdk-17-jdk-headless junit5)

# valet_apt_install PACKAGE...: installs those of PACKAGE... not installed yet.
valet_apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "valet: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # The :arm64 packages install beside the native ones (Debian multiarch).
  if [[ " ${missing[*]}" == *":arm64"* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

valet_install_deps() { valet_apt_install "${VALET_PACKAGES[@]}"; }

valet_install_test_deps() {
  local extra=()
  # The server's openai-client test runs on Node.js (20 or later pinned by
  # its package.json); Debian's is taken only where none is installed.
  command -v node >/dev/null || extra+=(nodejs npm)
  valet_apt_install "${VALET_PACKAGES[@]}" "${VALET_TEST_PACKAGES[@]}" "${extra[@]}"
}

# valet_build DIR [cmake args...]: configures (once) and builds the tree in DIR.
valet_build() {
  local dir="$1"; shift
  cmake -S "$VALET_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir"
}
