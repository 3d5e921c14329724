/**
 * LoRA adapters served beside the base model: PEFT adapter directories read and checked against
 * the model ({@link io.radixkv.lora.PeftAdapterConfig}, {@link io.radixkv.lora.LoraAdapter}), a
 * fixed number of slots the running requests' adapters occupy ({@link io.radixkv.lora.LoraSlots}),
 * and the per-step deltas added after each projection ({@link io.radixkv.lora.LoraStep}).
 */
package io.radixkv.lora;
