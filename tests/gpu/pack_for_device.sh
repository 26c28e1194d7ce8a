#!/usr/bin/env bash
# pack_for_device.sh: builds what the GPU machine runs and gathers it, with every shared
# library it loads except the C library and the CUDA driver, into .gpu/ (git-ignored), so
# that `run` can carry .gpu/ to a machine that has no Bazel and none of Debian's libraries.
#
#   tests/gpu/pack_for_device.sh        then: run(command="tests/gpu/device_checks.sh", carry=[".gpu"])
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude

TESTS=(//stages/upload:device_memory_test //tests:cuda_upload_test)
bazel build -c opt //runtime:flowloader "${TESTS[@]}"

rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
binaries=(bazel-bin/runtime/flowloader)
for t in "${TESTS[@]}"; do path=${t#//}; binaries+=("bazel-bin/${path/://}"); done
cp -L "${binaries[@]}" .gpu/bin/
# ldd where they were built, so that tests' $ORIGIN-relative Bazel libraries resolve. The
# loader, glibc and the driver belong to the machine; everything else travels.
for bin in "${binaries[@]}"; do
  ldd "$bin" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -vE '/(ld-linux[^/]*|libc|libm|libdl|librt|libpthread|libresolv|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" .gpu/lib/; done
du -sh .gpu
