#!/usr/bin/env bash
# Regenerates the committed FFM bindings under bindings/src with jextract (JDK 25 build).
# jextract is not in any package registry: build it from openjdk/jextract (bindings/README.md)
# and point JEXTRACT at its launcher. Generated files are never edited by hand.
#
# No -l option: the generated code resolves symbols through SymbolLookup.loaderLookup(),
# and io.radixkv.kernels.NativeLibrary loads libradixkv / libradixkv_cuda / libcudart with
# System.load(absolute path) first, so no absolute path ends up in generated code.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
JEXTRACT=${JEXTRACT:-jextract}
CUDA_INCLUDE=${CUDA_INCLUDE:-/usr/local/cuda/include}
out="$here/src"

rm -rf "$out/io/radixkv/bindings"
mkdir -p "$out"

# (a) the radixkv ABI: only the declarations of radixkv.h itself (not stdint.h's)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$JEXTRACT" --dump-includes "$tmp/all.txt" -I "$root/native/include" "$root/native/include/radixkv.h"
grep 'radixkv.h$' "$tmp/all.txt" | grep -v -- '--include-typedef' > "$tmp/radixkv.txt"
"$JEXTRACT" --output "$out" -t io.radixkv.bindings -I "$root/native/include" \
  --header-class-name radixkv_h @"$tmp/radixkv.txt" \
  "$root/native/include/radixkv.h"

# (b) the benchmark yardsticks (libradixkv_bench): only radixkv_bench.h's own declarations
"$JEXTRACT" --dump-includes "$tmp/all-bench.txt" -I "$root/native/include" "$root/native/include/radixkv_bench.h"
grep 'radixkv_bench.h$' "$tmp/all-bench.txt" | grep -v -- '--include-typedef' > "$tmp/radixkv_bench.txt"
"$JEXTRACT" --output "$out" -t io.radixkv.bindings -I "$root/native/include" \
  --header-class-name radixkv_bench_h @"$tmp/radixkv_bench.txt" \
  "$root/native/include/radixkv_bench.h"

# (c) the CUDA runtime subset Java needs to own device memory
"$JEXTRACT" --output "$out" -t io.radixkv.bindings.cuda -I "$CUDA_INCLUDE" \
  --header-class-name cudart_h \
  --include-function cudaGetDeviceCount \
  --include-function cudaSetDevice \
  --include-function cudaMalloc \
  --include-function cudaFree \
  --include-function cudaMemcpy \
  --include-function cudaMemcpyAsync \
  --include-function cudaMemset \
  --include-function cudaMemsetAsync \
  --include-function cudaMemcpy2DAsync \
  --include-function cudaMallocHost \
  --include-function cudaFreeHost \
  --include-function cudaStreamCreateWithFlags \
  --include-function cudaEventCreateWithFlags \
  --include-function cudaStreamCreate \
  --include-function cudaStreamDestroy \
  --include-function cudaStreamSynchronize \
  --include-function cudaDeviceSynchronize \
  --include-function cudaGetErrorString \
  --include-function cudaGetLastError \
  --include-function cudaEventCreate \
  --include-function cudaEventDestroy \
  --include-function cudaEventRecord \
  --include-function cudaEventSynchronize \
  --include-function cudaEventElapsedTime \
  --include-function cudaStreamBeginCapture \
  --include-function cudaStreamEndCapture \
  --include-function cudaGraphInstantiate \
  --include-function cudaGraphLaunch \
  --include-function cudaGraphExecDestroy \
  --include-function cudaGraphDestroy \
  --include-typedef cudaError_t \
  --include-typedef cudaStream_t \
  --include-typedef cudaEvent_t \
  --include-typedef cudaGraph_t \
  --include-typedef cudaGraphExec_t \
  --include-constant cudaSuccess \
  --include-constant cudaErrorNoDevice \
  --include-constant cudaErrorInsufficientDriver \
  --include-constant cudaMemcpyHostToHost \
  --include-constant cudaMemcpyHostToDevice \
  --include-constant cudaMemcpyDeviceToHost \
  --include-constant cudaMemcpyDeviceToDevice \
  --include-constant cudaMemcpyDefault \
  --include-constant cudaStreamNonBlocking \
  --include-constant cudaEventDisableTiming \
  --include-constant cudaStreamCaptureModeRelaxed \
  "$CUDA_INCLUDE/cuda_runtime_api.h"

echo "bindings regenerated under $out"
