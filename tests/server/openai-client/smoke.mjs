// Drives a running radixkv server with the official OpenAI client (npm package `openai`):
// a completion, a chat completion, a streamed chat completion and an unknown model.
// Usage: node smoke.mjs BASE_URL MODEL   (prints one JSON object with what came back)
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name a prime number.' },
];
const out = {};

const c = await client.completions.create({ model, prompt: 'Hello, my name is', max_tokens: 8, temperature: 0 });
out.completion = { text: c.choices[0].text, finish: c.choices[0].finish_reason, usage: c.usage };

const ch = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
out.chat = {
  role: ch.choices[0].message.role,
  content: ch.choices[0].message.content,
  finish: ch.choices[0].finish_reason,
  usage: ch.usage,
};

const stream = await client.chat.completions.create({
  model, messages, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let content = '';
let role = null;
let finish = null;
let usage = null;
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.choices.length > 0) {
    const d = chunk.choices[0].delta;
    role = d.role ?? role;
    content += d.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  if (chunk.usage) usage = chunk.usage;
}
out.stream = { role, content, finish, usage, chunks };

try {
  await client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 });
  out.unknownModel = null;
} catch (e) {
  out.unknownModel = { status: e.status, type: e.constructor.name, message: e.message };
}
console.log(JSON.stringify(out));
