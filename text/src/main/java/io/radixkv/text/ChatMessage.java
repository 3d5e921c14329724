package io.radixkv.text;

/** One chat turn: {@code role} (system, user, assistant, tool, ...) and its text content. */
public record ChatMessage(String role, String content) {}
