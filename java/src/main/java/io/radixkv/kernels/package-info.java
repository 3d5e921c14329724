/**
 * What a kernel backend is: the interfaces ({@link io.radixkv.kernels.KernelBackend},
 * {@link io.radixkv.kernels.AttentionKernels}, {@link io.radixkv.kernels.DenseKernels},
 * {@link io.radixkv.kernels.KvCacheKernels}, {@link io.radixkv.kernels.SamplingKernels},
 * {@link io.radixkv.kernels.BackendMemory}), their value types and argument checks, shared by
 * the implementations in {@code kernels.cpu}, {@code kernels.cuda} and {@code kernels.reference}.
 * Nothing here loads native code.
 */
package io.radixkv.kernels;
