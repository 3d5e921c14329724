// Structured outputs and forced tool calls with the official OpenAI client (npm package `openai`):
// chat.completions with response_format json_schema, and with tools under tool_choice "required"
// and a named function, each streamed and not with the same seed. Prints one JSON object with
// what the client parsed; the Java test validates it against the schemas.
// Usage: node structured.mjs BASE_URL MODEL
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const schema = {
  type: 'object',
  properties: {
    answer: { type: 'string', enum: ['yes', 'no', 'maybe'] },
    n: { type: 'integer', minimum: 0, maximum: 99 },
    why: { type: 'string', maxLength: 4 },
  },
  required: ['answer', 'n', 'why'], additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'set_unit', parameters: { type: 'object',
    properties: { unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['unit'], additionalProperties: false } } },
  { type: 'function', function: { name: 'set_mode', parameters: { type: 'object',
    properties: { mode: { enum: ['fast', 'slow', 3] } }, required: ['mode'], additionalProperties: false } } },
];
const messages = [{ role: 'user', content: 'Set it up and answer in JSON.' }];

async function both(request) {
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let content = '';
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      content += c.delta.content ?? '';
      for (const t of c.delta.tool_calls ?? []) {
        calls[t.index] ??= { id: t.id, function: { name: t.function?.name, arguments: '' } };
        calls[t.index].function.arguments += t.function?.arguments ?? '';
      }
      finish = c.finish_reason ?? finish;
    }
  }
  const m = whole.choices[0].message;
  return {
    whole: { content: m.content, calls: (m.tool_calls ?? []).map(t => ({ id: t.id, function: { name: t.function.name, arguments: t.function.arguments } })),
      finish: whole.choices[0].finish_reason },
    stream: { content, calls, finish },
  };
}

const out = { responseFormat: [], required: [], named: [] };
for (const seed of [1, 2, 3]) {
  const base = { model, messages, max_tokens: 160, temperature: 1.0, seed };
  out.responseFormat.push(await both({ ...base,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema } } }));
  out.required.push(await both({ ...base, tools, tool_choice: 'required', parallel_tool_calls: false }));
  out.named.push(await both({ ...base, tools, tool_choice: { type: 'function', function: { name: 'set_mode' } } }));
}
console.log(JSON.stringify(out));
