/** Radix-tree prefix cache: matching, insertion, lock refs, eviction policies, namespaces, metrics. */
package io.radixkv.cache;
