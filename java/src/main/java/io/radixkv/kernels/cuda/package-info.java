/** The CUDA backend: libradixkv_cuda's kernels over device memory, CUDA graphs and device error reporting. */
package io.radixkv.kernels.cuda;
