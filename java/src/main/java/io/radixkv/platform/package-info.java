/** Probes of the host machine that kernels and benchmarks size themselves by: transparent huge pages and last-level cache sizes. No native library needed. */
package io.radixkv.platform;
