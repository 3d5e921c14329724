// Sends tool-calling chat requests with the official OpenAI client (npm package `openai`): tools,
// tool_choice, a history with an assistant tool call (content null) and its tool result, streamed
// and not. Prints one JSON object with what the client parsed.
// Usage: node tools.mjs BASE_URL MODEL
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const messages = [
  { role: 'user', content: 'What is the weather in Paris?' },
  { role: 'assistant', content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '22 degrees, sunny' },
];
const out = {};
const r = await client.chat.completions.create({ model, messages, tools, tool_choice: 'auto', max_tokens: 12, temperature: 0 });
const m = r.choices[0].message;
out.chat = { content: m.content, reasoning: m.reasoning_content ?? null, toolCalls: m.tool_calls ?? [],
  finish: r.choices[0].finish_reason };

const stream = await client.chat.completions.create({
  model, messages, tools, tool_choice: 'auto', max_tokens: 12, temperature: 0, stream: true });
let content = '';
let reasoning = '';
const calls = [];
let finish = null;
for await (const chunk of stream) {
  for (const c of chunk.choices) {
    content += c.delta.content ?? '';
    reasoning += c.delta.reasoning_content ?? '';
    for (const t of c.delta.tool_calls ?? []) {
      calls[t.index] ??= { id: t.id, name: t.function?.name, arguments: '' };
      calls[t.index].arguments += t.function?.arguments ?? '';
    }
    finish = c.finish_reason ?? finish;
  }
}
out.stream = { content, reasoning, calls, finish };

// tool_choice required and named constrain the output to calls of set_unit: streamed, the client
// gets each call's index, id, type and name first, then its arguments in pieces
const unitTools = [{
  type: 'function',
  function: {
    name: 'set_unit',
    parameters: { type: 'object', properties: { unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['unit'], additionalProperties: false },
  },
}];
for (const [key, toolChoice] of [['required', 'required'], ['named', { type: 'function', function: { name: 'set_unit' } }]]) {
  const request = { model, messages: [{ role: 'user', content: 'Set it up.' }], tools: unitTools, tool_choice: toolChoice,
    parallel_tool_calls: false, max_tokens: 80, temperature: 0 };
  const whole = await client.chat.completions.create(request);
  const s = await client.chat.completions.create({ ...request, stream: true });
  const streamed = [];
  let order = 'ok';
  let streamFinish = null;
  for await (const chunk of s) {
    for (const c of chunk.choices) {
      for (const t of c.delta.tool_calls ?? []) {
        if (!streamed[t.index]) {
          if (!t.id || t.type !== 'function' || !t.function?.name || t.function.arguments !== '') order = `bad first chunk ${JSON.stringify(t)}`;
          streamed[t.index] = { id: t.id, name: t.function?.name, arguments: '', pieces: 0 };
        } else {
          if (t.function?.name || (t.id && t.id !== streamed[t.index].id)) order = `name or new id after the first chunk ${JSON.stringify(t)}`;
          streamed[t.index].arguments += t.function?.arguments ?? '';
          streamed[t.index].pieces++;
        }
      }
      streamFinish = c.finish_reason ?? streamFinish;
    }
  }
  out[key] = {
    whole: (whole.choices[0].message.tool_calls ?? []).map(t => ({ name: t.function.name, arguments: t.function.arguments })),
    wholeFinish: whole.choices[0].finish_reason,
    stream: streamed, order, finish: streamFinish,
  };
}

try {
  await client.chat.completions.create({ model, messages, tools, max_tokens: 1,
    tool_choice: { type: 'function', function: { name: 'no_such_function' } } });
  out.unknownFunction = null;
} catch (e) {
  out.unknownFunction = { status: e.status, param: e.param ?? e.error?.param ?? null, message: e.message };
}
console.log(JSON.stringify(out));
