package io.radixkv.engine;

/**
 * What tells a loaded LoRA adapter apart outside the engine (KV events, a shared KV tier).
 *
 * @param name   the name requests select it by (a namespace's {@code loraId}; vLLM's {@code lora_name})
 * @param id     a number no other adapter loaded in this process has, counting from 1 (vLLM's
 *               {@code lora_int_id}, the {@code lora_id} of its KV events); a reload gets a new one
 * @param sha256 hex SHA-256 of the adapter's files ({@code adapter_config.json}, then
 *               {@code adapter_model.safetensors}): equal on every replica that loads the same files,
 *               different for other weights under the same name
 */
public record LoraIdentity(String name, long id, String sha256) {}
