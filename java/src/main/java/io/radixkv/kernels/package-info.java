/** Kernel backends (CPU via libradixkv, CUDA via libradixkv_cuda, plain-Java reference) and their value types. */
package io.radixkv.kernels;
