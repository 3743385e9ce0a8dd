#!/usr/bin/env bash
# Installs the Debian packages valet builds with, only those that are missing.
# Sourced by build.sh and test.sh; safe to run any number of times.
set -euo pipefail

VALET_PACKAGES=(g++ cmake ninja-build libgtest-dev libbenchmark-dev libopenblas-dev clang libclang-rt-14-dev libzstd-dev liblz4-dev pkg-config libcpp-httplib-dev nlohmann-json3-dev unicode-data python3
  # The Java binding and its JUnit 5 tests (bindings/java).
  openjdk-17-jdk-headless junit5
  # The aarch64 cross build and its qemu test runs (scripts/test-aarch64.sh):
  # Debian's cross compiler, and the target's libraries as arm64 packages.
  g++-aarch64-linux-gnu qemu-user libzstd-dev:arm64 liblz4-dev:arm64 libgtest-dev:arm64)

valet_install_deps() {
  local missing=()
  for p in "${VALET_PACKAGES[@]}"; do
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

# valet_build DIR [cmake args...]: configures (once) and builds the tree in DIR.
valet_build() {
  local dir="$1"; shift
  cmake -S "$VALET_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir"
}
