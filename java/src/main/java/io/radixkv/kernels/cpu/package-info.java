/** The CPU backend: libradixkv's kernels over host memory through FFM, the library loader and its bandwidth baselines. */
package io.radixkv.kernels.cpu;
