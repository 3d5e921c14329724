/** The plain-Java reference backend: the independent implementation the native kernels are tested against. */
package io.radixkv.kernels.reference;
