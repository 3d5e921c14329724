/**
 * Hugging Face safetensors checkpoints: reading and validating file headers and the sharded
 * index, a named off-heap parameter store, and loading tensors into it from memory-mapped files
 * according to a list of {@link io.radixkv.checkpoint.TensorSpec}s that the model provides.
 * Knows nothing of any model architecture.
 */
package io.radixkv.checkpoint;
