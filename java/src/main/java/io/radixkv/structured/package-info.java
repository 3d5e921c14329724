/**
 * Structured outputs (constrained decoding): a {@link io.radixkv.structured.Constraint} (any
 * JSON, a JSON object, a JSON Schema subset, a regular expression, a choice of strings) compiles
 * to an automaton over bytes, built lazily by Brzozowski derivatives; bound to a model's
 * {@link io.radixkv.structured.TokenVocabulary} it yields, per automaton state, a bitmask of the
 * tokens that keep the text a prefix of a match, computed once by walking a token trie and
 * cached. {@link io.radixkv.structured.GrammarCompiler} caches compiled grammars; a
 * {@link io.radixkv.structured.GrammarMatcher} is one generation's position. Depends on no other
 * radixkv package (Jackson only, for schemas and {@code tokenizer.json}).
 */
package io.radixkv.structured;
