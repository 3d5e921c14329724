/** Chooses a kernel backend by name (auto, cpu, cuda, java). */
package io.radixkv.kernels.select;
