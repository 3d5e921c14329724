// Asks a running radixkv server for n = 2 choices with the official OpenAI client (npm package
// `openai`): a completion and a streamed chat completion.
// Usage: node samples.mjs BASE_URL MODEL   (prints one JSON object with what came back)
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const out = {};

const c = await client.completions.create({ model, prompt: 'Hello, my name is', max_tokens: 6, n: 2, seed: 5 });
out.completion = { choices: c.choices.map((x) => ({ index: x.index, text: x.text, finish: x.finish_reason })), usage: c.usage };

const stream = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'Name a prime number.' }], max_tokens: 6, n: 2, seed: 5, stream: true,
});
const choices = {};
for await (const chunk of stream) {
  for (const ch of chunk.choices) {
    const c2 = (choices[ch.index] ??= { content: '', finish: null });
    c2.content += ch.delta.content ?? '';
    c2.finish = ch.finish_reason ?? c2.finish;
  }
}
out.stream = choices;
console.log(JSON.stringify(out));
