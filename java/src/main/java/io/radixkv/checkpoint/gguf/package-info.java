/**
 * GGUF files (the llama.cpp/ggml container, versions 2 and 3, little-endian): the header, every
 * metadata value kind, the tensor infos and the aligned data section, read from a memory-mapped
 * file and validated in full (counts against the bytes left, string lengths, dimension products,
 * tensor ranges inside the data section and aligned, ggml type ids) before anything sized by the
 * file is allocated. Knows nothing of any model architecture: tensor and key names are the file's.
 */
package io.radixkv.checkpoint.gguf;
