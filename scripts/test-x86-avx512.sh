#!/usr/bin/env bash
# The AVX-512 part of the test suite: runs the kernel tests and the micro-model
# engine test on emulated AVX-512 CPUs, so the avx512vnni kernel table runs
# against the scalar reference on a machine without AVX-512 (qemu-user cannot
# emulate it; Bochs can). The test binaries are linked statically, packed with
# busybox into an initramfs and booted with Debian's kernel from an ISO in
# Bochs, with the guest's console on an emulated serial port written to a file.
#   tigerlake          AVX-512 F/BW/VL/VNNI: the avx512vnni table must run
#                      (it is also the active table: Bochs has no AVX-VNNI)
#   corei7_skylake_x   AVX-512 without VNNI: avx512vnni must be skipped,
#                      which checks the CPUID gating
# Fails when a test fails, when the guest never prints its end marker (a hung
# guest is killed after VALET_AVX512EMU_TIMEOUT seconds), or when a model's
# tables are not the expected ones, so a skipped avx512vnni table cannot pass
# as success on a VNNI model. Bochs 2.7 misreports some CPUID bits that
# Linux 6.1 cannot boot with (see clearcpuid below); the guest kernel's command
# line hides those features from the kernel.
# About 7 minutes on 2 idle cores, build included; see docs/testing-avx512.md.
# scripts/test.sh runs it unless VALET_TEST_QUICK=1.
# Usage: scripts/test-x86-avx512.sh [MODEL...]   (default: tigerlake corei7_skylake_x)
# Environment: VALET_AVX512EMU_BUILD (build dir, default build-avx512emu),
# VALET_AVX512EMU_WORK (ISO, logs and the kernel cache, default /tmp/avx512emu),
# VALET_AVX512EMU_TIMEOUT (seconds per guest, default 5400),
# VALET_AVX512EMU_FILTER (gtest filter for the kernel tests, default '*'),
# VALET_AVX512EMU_JOBS (build jobs, default nproc).
set -euo pipefail
# One function, so bash has read the whole file before it runs any of it.
main() {
VALET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${VALET_AVX512EMU_BUILD:-$VALET_ROOT/build-avx512emu}"
work="${VALET_AVX512EMU_WORK:-/tmp/avx512emu}"
timeout_s="${VALET_AVX512EMU_TIMEOUT:-5400}"
filter="${VALET_AVX512EMU_FILTER:-*}"
# Left out: Bochs 2.7 rounds VCVTPS2PH's exact ties away from zero instead of
# to even (2.5634765625 -> 0x4121, not 0x4120), so the avx2 F16 row converter,
# which every x86 table shares and which is exact on hardware, differs from
# the scalar reference here. The avx512vnni table changes no converter.
bochs_bugs='Fp16.SimdRowConversionsMatchScalar:Quantize.SimdActivationQuantizersAreBitExact'
if [[ "$filter" == *-* ]]; then filter="$filter:$bochs_bugs"; else filter="$filter-$bochs_bugs"; fi
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(tigerlake corei7_skylake_x)
start_s=$SECONDS

# Bochs and its BIOSes, rfb as its display (the one display plugin needing
# neither a terminal nor an X server), busybox for the guest's userland,
# isolinux and xorriso for the ISO, and what the static test build links.
packages=(bochs bochsbios vgabios busybox-static isolinux syslinux-common xorriso
          g++ cmake ninja-build libgtest-dev libzstd-dev liblz4-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "avx512 tests: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
mkdir -p "$work"

# The guest kernel: Debian's linux-image-amd64, unpacked (not installed, which
# would run the host's initramfs hooks) and kept across runs.
kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')"
if [ -z "$kpkg" ]; then
  $sudo apt-get update -qq
  kpkg="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')"
fi
kernel="$work/kernel/$kpkg.vmlinuz"
if [ ! -s "$kernel" ]; then
  rm -rf "$work/kernel" && mkdir -p "$work/kernel/deb"
  (cd "$work/kernel/deb" && apt-get download "$kpkg" >/dev/null 2>&1)
  dpkg-deb -x "$work/kernel/deb/"*.deb "$work/kernel/root"
  cp "$work/kernel/root/boot/vmlinuz-"* "$kernel"
  rm -rf "$work/kernel/deb" "$work/kernel/root"
fi

# Static test binaries. static-libs.cmake makes CMake pick the .a archives of
# zstd and lz4; -static does the rest.
kernel_tests=(kernels_fp16_test kernels_quant_test kernels_vec_dot_test kernels_tile_test
              kernels_packed_test kernels_attention_test)
engine_tests=(micro_engine_test)
build_start_s=$SECONDS
cmake -S "$VALET_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DVALET_ENGINE_ONLY=ON -DVALET_JAVA_TESTS=OFF -DVALET_BUILD_BENCH=OFF -DVALET_USE_BLAS=OFF \
  -DCMAKE_EXE_LINKER_FLAGS=-static \
  -DCMAKE_PROJECT_INCLUDE="$VALET_ROOT/scripts/avx512emu/static-libs.cmake" >/dev/null
# kernel_tables_probe (tests/kernels/tables_probe.cpp) prints the tables the
# guest's CPU has and runs, for check() below.
cmake --build "$build" -j "${VALET_AVX512EMU_JOBS:-$(nproc)}" --target "${kernel_tests[@]}" "${engine_tests[@]}" \
  kernel_tables_probe
probe="$build/tests/kernels/kernel_tables_probe"
build_s=$((SECONDS - build_start_s))

# The initramfs: busybox, the binaries, and an /init that runs them and
# prints each exit code and an end marker on the serial console.
iso_dir="$work/iso"
rm -rf "$work/initramfs" "$iso_dir"
mkdir -p "$work/initramfs/bin" "$work/initramfs/proc" "$work/initramfs/sys" "$work/initramfs/dev" \
  "$work/initramfs/tmp" "$iso_dir/isolinux"
cp /bin/busybox "$probe" "$work/initramfs/bin/"
for t in "${kernel_tests[@]}" "${engine_tests[@]}"; do
  cp "$(find "$build/tests" -type f -name "$t" | head -n1)" "$work/initramfs/bin/"
done
strip "$work/initramfs/bin/"*_test "$work/initramfs/bin/kernel_tables_probe"
{
  echo '#!/bin/busybox sh'
  echo '/bin/busybox --install -s /bin'
  echo 'export PATH=/bin HOME=/tmp'
  echo 'mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null'
  echo 'echo "VALET-CPU: $(grep -o -w "avx2\|avx512[a-z_0-9]*\|avx_vnni" /proc/cpuinfo | sort -u | tr "\n" " ")"'
  echo 'kernel_tables_probe; echo "VALET-EXIT kernel_tables_probe $?"'
  for t in "${kernel_tests[@]}"; do
    # The tile test in full: its KernelTables.Avx512Vnni* line shows OK or SKIPPED.
    brief=1
    [ "$t" = kernels_tile_test ] && brief=0
    echo "echo 'VALET-RUN $t'; $t --gtest_color=no --gtest_brief=$brief --gtest_filter='$filter'; echo \"VALET-EXIT $t \$?\""
  done
  for t in "${engine_tests[@]}"; do
    echo "echo 'VALET-RUN $t'; $t --gtest_color=no --gtest_brief=1; echo \"VALET-EXIT $t \$?\""
  done
  echo 'echo VALET-END'
  echo 'sync; poweroff -f'
} > "$work/initramfs/init"
chmod +x "$work/initramfs/init"
(cd "$work/initramfs" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$iso_dir/isolinux/initrd.gz"
cp "$kernel" "$iso_dir/isolinux/vmlinuz"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$iso_dir/isolinux/"
# clearcpuid: Bochs 2.7's models with VNNI misreport CPUID in ways that break
# Linux 6.1 (user space still sees every feature, which is what valet reads):
# - PKRU (XSAVE component 9) has size 0, and the compacted XSAVE size (XSAVES,
#   XSAVEC) reads as the standard one: the kernel finds the layout
#   inconsistent and turns XSAVE, hence AVX, off;
# - FSRM is set while IA32_MISC_ENABLE has fast strings off, so the kernel
#   drops ERMS but keeps FSRM, and its memmove, which takes FSRM to imply
#   ERMS, copies 2^64 bytes on its first copy shorter than 32 bytes: the
#   guest dies silently early in boot.
cat > "$iso_dir/isolinux/isolinux.cfg" <<'EOF'
SERIAL 0 115200
DEFAULT valet
PROMPT 0
TIMEOUT 0
LABEL valet
  KERNEL vmlinuz
  APPEND initrd=initrd.gz console=ttyS0,115200 quiet loglevel=3 rdinit=/init mitigations=off clearcpuid=pku,ospke,xsaves,xsavec,fsrm
EOF
xorriso -as mkisofs -quiet -o "$work/valet.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
  -no-emul-boot -boot-load-size 4 -boot-info-table "$iso_dir" 2>/dev/null

# sound: the dummy driver, since with no sound card Bochs 2.7's ALSA mixer
# thread aborts ("buffer overflow detected").
boot() {  # boot MODEL: runs the ISO in Bochs; the console goes to $work/MODEL/serial.log
  local model="$1" dir="$work/$1"
  rm -rf "$dir" && mkdir -p "$dir"
  cat > "$dir/bochsrc" <<EOF
megs: 1024
cpu: model=$model, count=1, ips=50000000
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path=$work/valet.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$dir/serial.log
display_library: rfb, options="timeout=0"
clock: sync=none, time0=local
speaker: enabled=0
sound: driver=dummy
log: $dir/bochs.log
panic: action=fatal
error: action=ignore
info: action=ignore
debug: action=ignore
EOF
  # Debian's Bochs has its debugger built in and stops at the first
  # instruction: the command file lets it run, then quit when the guest stops.
  printf 'c\nquit\n' > "$dir/debugger.rc"
  local t0=$SECONDS
  (cd "$dir" && exec bochs -q -f bochsrc -rc debugger.rc </dev/null >bochs.out 2>&1) &
  local pid=$!
  # poweroff ends Bochs; the marker ends the wait too, in case it does not.
  while kill -0 "$pid" 2>/dev/null; do
    if grep -q '^VALET-END' "$dir/serial.log" 2>/dev/null; then
      sleep 5
      kill "$pid" 2>/dev/null || true
      break
    fi
    if [ $((SECONDS - t0)) -ge "$timeout_s" ]; then
      echo "avx512 tests: $model: no end marker after ${timeout_s}s, killing Bochs" >&2
      kill "$pid" 2>/dev/null || true
      break
    fi
    sleep 5
  done
  wait "$pid" 2>/dev/null || true
  echo $((SECONDS - t0)) > "$dir/seconds"
}

# check MODEL: prints the guest's output and says whether it is a pass.
check() {
  local model="$1" log="$work/$1/serial.log" ok=0
  echo "== x86 AVX-512 tests, Bochs cpu model $model ($(cat "$work/$model/seconds") s)"
  tr -d '\r' < "$log" | sed -n '/^VALET-CPU/,$p'
  if ! grep -q '^VALET-END' "$log"; then
    echo "FAIL $model: the guest never printed its end marker (see $work/$model/)"
    tail -n 20 "$log"
    return 1
  fi
  if grep -a '^VALET-EXIT' "$log" | tr -d '\r' | grep -v ' 0$'; then
    echo "FAIL $model: a test binary exited non-zero"; ok=1
  fi
  local n_exits
  n_exits=$(grep -a -c '^VALET-EXIT' "$log")
  if [ "$n_exits" -ne $((1 + ${#kernel_tests[@]} + ${#engine_tests[@]})) ]; then
    echo "FAIL $model: $n_exits of $((1 + ${#kernel_tests[@]} + ${#engine_tests[@]})) binaries reported an exit code"; ok=1
  fi
  local tables avx512_line
  tables="$(grep -a '^VALET-TABLES:' "$log" | tr -d '\r')"
  avx512_line="$(grep -a 'KernelTables.Avx512VnniImpliesAvx2AndComputesTheSameIntegers' "$log" | tr -d '\r' | head -n 2 | tail -n 1)"
  case "$model" in
    corei7_skylake_x)
      # AVX-512 without VNNI: the table must be gated off.
      [ "$tables" = "VALET-TABLES: scalar avx2" ] || { echo "FAIL $model: expected tables scalar avx2, got '$tables'"; ok=1; }
      [[ "$avx512_line" == *"[  SKIPPED ]"* ]] || { echo "FAIL $model: Avx512Vnni test not skipped: '$avx512_line'"; ok=1; } ;;
    *)
      [[ " $tables " == *" avx512vnni "* ]] || { echo "FAIL $model: avx512vnni table did not run: '$tables'"; ok=1; }
      [[ "$avx512_line" == *"[       OK ]"* ]] || { echo "FAIL $model: Avx512Vnni test did not pass: '$avx512_line'"; ok=1; } ;;
  esac
  [ $ok -eq 0 ] && echo "PASS $model: $tables; $avx512_line"
  return $ok
}

# Bochs is single-threaded: the models boot side by side. Each Bochs takes
# the first free VNC port from 5900 as it starts, and two starting at once can
# both pick 5900, the second then exiting ("RFB could not bind any port"): the
# next one starts once this one's guest has written to its serial port.
pids=()
for m in "${models[@]}"; do
  rm -rf "${work:?}/$m"
  boot "$m" & pids+=($!)
  t0=$SECONDS
  while [ ! -s "$work/$m/serial.log" ] && kill -0 "${pids[-1]}" 2>/dev/null && [ $((SECONDS - t0)) -lt 300 ]; do
    sleep 1
  done
done
for p in "${pids[@]}"; do wait "$p"; done
status=0
for m in "${models[@]}"; do check "$m" || status=1; done
echo "== x86 AVX-512 tests: build ${build_s} s, total $((SECONDS - start_s)) s, $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
}
main "$@"
