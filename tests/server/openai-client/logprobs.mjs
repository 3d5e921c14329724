// Reads log-probabilities through the official OpenAI client (npm package `openai`): a completion
// with echo and logprobs (lm-eval's loglikelihood shape), a chat completion with logprobs and
// top_logprobs, and the same chat streamed.
// Usage: node logprobs.mjs BASE_URL MODEL   (prints one JSON object with what came back)
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const messages = [{ role: 'user', content: 'Name a prime number.' }];
const out = {};

const c = await client.completions.create({
  model, prompt: 'The capital of France is', max_tokens: 0, echo: true, logprobs: 1, temperature: 0,
});
out.completion = { text: c.choices[0].text, logprobs: c.choices[0].logprobs, usage: c.usage };

const ch = await client.chat.completions.create({
  model, messages, max_tokens: 3, temperature: 0, logprobs: true, top_logprobs: 2,
});
out.chat = { content: ch.choices[0].message.content, logprobs: ch.choices[0].logprobs };

const stream = await client.chat.completions.create({
  model, messages, max_tokens: 3, temperature: 0, logprobs: true, top_logprobs: 2, stream: true,
});
const entries = [];
for await (const chunk of stream) {
  for (const e of chunk.choices[0]?.logprobs?.content ?? []) entries.push(e);
}
out.stream = { content: entries };
console.log(JSON.stringify(out));
