#!/usr/bin/env bash
# The install-and-use check (ctest unit.install.find_package): installs the
# build tree into a temporary prefix, configures, builds and runs
# tests/install/app (find_package(gpuhal), a sim device, a queue fill, every
# byte checked) against it with the build's own compiler, then runs the
# installed hal-check on the simulator (the wrapper must find the installed
# test kernels: a Dispatch area), and over the installed simulated vendor
# libraries; builds and runs README's example.
#
# Usage: tests/install/install_test.sh BUILD_DIR CXX_COMPILER [CMAKE_ARGS...]
# Exit status: 0 when all of that passed; 1 otherwise; 2 for bad arguments.
set -euo pipefail
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,10p' "$0"; exit 0
fi
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR CXX_COMPILER [CMAKE_ARGS...]" >&2; exit 2
fi
build="$1"; cxx="$2"; shift 2
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpuhal-install-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" \
  || { cat "$tmp/install.log"; exit 1; }
# Nothing of the source or build tree may leak into the package files.
if grep -rlF -e "$(cd "$here/../.." && pwd)" -e "$(cd "$build" && pwd)" \
     "$tmp/prefix/lib/cmake"; then
  echo "install_test: the package config names the source or build tree" >&2
  exit 1
fi
cmake -S "$here/app" -B "$tmp/app" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" > "$tmp/configure.log" \
  || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/app" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/app/gpuhal_app" 'sim://?queues=2'
# README's "Use it from your project" example, as written there.
readme="$here/../../README.md"
mkdir -p "$tmp/readme"
section() {  # the first ```$1 block after the README heading
  awk -v lang="$1" '/^## Use it from your project/ {s=1}
    s && $0 == "```" lang {f=1; next} f && /^```/ {exit} f' "$readme"
}
# Nothing is added to the README's CMakeLists.txt: a preamble here (it once
# set CMAKE_CXX_STANDARD) hid that the package did not ask for C++20.
section cmake > "$tmp/readme/CMakeLists.txt"
section cpp > "$tmp/readme/main.cc"
grep -q find_package "$tmp/readme/CMakeLists.txt" && grep -q main "$tmp/readme/main.cc" \
  || { echo "install_test: README example not found" >&2; exit 1; }
cmake -S "$tmp/readme" -B "$tmp/readme/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" > "$tmp/readme.log" \
  && cmake --build "$tmp/readme/build" >> "$tmp/readme.log" \
  || { cat "$tmp/readme.log"; exit 1; }
"$tmp/readme/build/myapp"
# A component this install lacks must fail find_package, not pass silently.
if cmake -S "$here/app" -B "$tmp/app-missing" -G Ninja \
     -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
     -DGPUHAL_APP_EXTRA_COMPONENT=no_such_driver "$@" > "$tmp/missing.log" 2>&1; then
  echo "install_test: find_package(gpuhal COMPONENTS no_such_driver) passed" >&2
  exit 1
fi
grep -q "no 'no_such_driver' driver" "$tmp/missing.log" \
  || { cat "$tmp/missing.log"; exit 1; }
# The installed hal-check, away from the build tree's kernels.
HAL_CTS_KERNELS_DIR= HALSIM_KERNEL_DIR= "$tmp/prefix/bin/hal-check" \
  --device=sim --gtest_filter='Dispatch.*:QueueTransfer.*'
# The installed simulated vendor libraries behind their drivers, through
# the same wrapper (their kernels and the HSA device library installed).
for pair in cuda:cuda hip:hip amdgpu:hsa; do
  driver="${pair%%:*}"; lib="$tmp/prefix/lib/libhalsim_${pair##*:}.so"
  [ -f "$lib" ] || continue
  env "HAL_${driver^^}_LIBRARY=$lib" HALSIM_KERNEL_DIR= HALSIM_HSA_DEVICE_LIBRARY_DIR= \
    HAL_CTS_KERNELS_DIR= "$tmp/prefix/bin/hal-check" --device="$driver" \
    --gtest_filter='Dispatch.*:QueueTransfer.*' > "$tmp/$driver.log" 2>&1 \
    || { cat "$tmp/$driver.log"; exit 1; }
  grep -E "^total|RESULT" "$tmp/$driver.log" | sed "s/^/$driver: /"
done
# An installed simulated library used outside the wrapper (a user's own
# program): its build-tree kernel paths are gone on another machine, so it
# finds the install's kernels relative to itself. A folder that does not
# exist stands in for the missing build tree.
lib="$tmp/prefix/lib/libhalsim_cuda.so"
if [ -f "$lib" ]; then
  HAL_CUDA_LIBRARY="$lib" HALSIM_KERNEL_DIR="$tmp/no-such-build-tree" \
    HAL_CTS_KERNELS_DIR= "$tmp/prefix/bin/hal-check" --device=cuda \
    --gtest_filter='Dispatch.*' > "$tmp/cuda-installed.log" 2>&1 \
    || { cat "$tmp/cuda-installed.log"; exit 1; }
  grep -E "^total" "$tmp/cuda-installed.log" | sed "s/^/cuda (kernels found from the library): /"
fi
echo "install_test: PASS"
