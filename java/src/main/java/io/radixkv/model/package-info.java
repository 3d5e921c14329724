/** Llama-architecture model runner, weights (synthetic presets and safetensors), dense kernels. */
package io.radixkv.model;
