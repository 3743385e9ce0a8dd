#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR SOURCE_DIR VALET_CLI
# Installs BUILD_DIR into a temporary prefix, checks the library's SONAME and
# exported symbols, then builds examples/consumer from that prefix alone, once
# with find_package(valet) and once with pkg-config, and runs the programs on a
# tiny synthetic model.
set -euo pipefail
build="$1" src="$2" cli="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
lib="$(find "$prefix" -name 'libvalet.so' | head -n1)"
[ -n "$lib" ] || fail "no libvalet.so under $prefix"
libdir="$(dirname "$lib")"

soname="$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[[ "$soname" =~ ^libvalet\.so\.[0-9]+\.[0-9]+$ ]] || fail "SONAME '$soname' is not libvalet.so.MAJOR.MINOR"

# Every exported valet symbol must be one the public headers mark VALET_API
# (or a C function of valet.h); std:: template instantiations come from the
# standard library's own default visibility and are not valet's API.
public_names="$(cat "$src"/include/valet/*.h | tr '\n' ' ' | grep -o 'VALET_API[^(;{]*' |
                grep -o '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*$' | tr -d ' ' | sort -u)"
leaked="$(nm -D --defined-only -C "$lib" | cut -d' ' -f3- |
          sed -E 's/^(typeinfo name for|typeinfo for|vtable for|VTT for) //' |
          grep -E '^valet::' | sed -E 's/^valet::([A-Za-z_0-9]+).*/\1/' | sort -u |
          grep -vxF -f <(echo "$public_names") || true)"
[ -z "$leaked" ] || fail "libvalet.so exports internal symbols: $(echo $leaked)"
# Not `nm | grep -q`: under pipefail, grep's early exit can SIGPIPE nm and fail the check.
exported="$(nm -D --defined-only "$lib")"
grep -q ' T valet_create$' <<<"$exported" || fail "valet_create is not exported"

"$cli" synth-model --preset tiny -o "$tmp/tiny.gguf" >/dev/null

echo "== find_package(valet)"
cmake -S "$src/examples/consumer" -B "$tmp/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
"$tmp/cmake-build/consumer_c" "$tmp/tiny.gguf"
"$tmp/cmake-build/consumer_cpp"

echo "== pkg-config valet"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046  # pkg-config prints several words on purpose
cc -std=c11 -Wall -Wextra -Werror "$src/examples/consumer/consumer.c" -o "$tmp/consumer_pc" \
   $(pkg-config --cflags --libs valet) -Wl,-rpath,"$(pkg-config --variable=libdir valet)"
out="$("$tmp/consumer_pc" "$tmp/tiny.gguf")"
echo "$out"
version="$(pkg-config --modversion valet)"
[ "$(echo "$out" | head -n1)" = "libvalet $version" ] || fail "valet_version() disagrees with valet.pc ($version)"
echo "package OK ($soname, valet $version)"
