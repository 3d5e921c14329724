// Output tokens/s of a running radixkv (or vLLM) server with and without `logprobs: K`, in one run:
// C concurrent /v1/completions requests of P random token ids, exactly G tokens each (ignore_eos),
// R rounds alternating the two settings. Usage: node logprobs-throughput.mjs URL MODEL [C P G R K]
const [url, model, C = 16, P = 128, G = 64, R = 3, K = 5] = process.argv.slice(2);
const conc = +C, plen = +P, gen = +G, rounds = +R, k = +K;
let seed = 1;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
async function one(withLp) {
  const prompt = Array.from({ length: plen }, () => 1 + Math.floor(rnd() * 30000));
  const body = { model, prompt, max_tokens: gen, ignore_eos: true, temperature: 0.8, seed: Math.floor(rnd() * 1e9) };
  if (withLp) body.logprobs = k;
  const r = await fetch(url + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(JSON.stringify(j));
  if (withLp && j.choices[0].logprobs.top_logprobs.length !== gen) throw new Error('logprobs missing');
  return j.usage.completion_tokens;
}
async function round(withLp) {
  const t0 = performance.now();
  const toks = (await Promise.all(Array.from({ length: conc }, () => one(withLp)))).reduce((a, b) => a + b, 0);
  return toks / ((performance.now() - t0) / 1000);
}
await round(false); await round(true); // warm-up
const res = { without: [], with: [] };
for (let i = 0; i < rounds; i++) { res.without.push(await round(false)); res.with.push(await round(true)); }
const mean = a => a.reduce((x, y) => x + y, 0) / a.length;
console.log(JSON.stringify({ concurrency: conc, prompt: plen, gen, k, without: res.without.map(x => +x.toFixed(1)), with: res.with.map(x => +x.toFixed(1)),
  ratio: +(mean(res.with) / mean(res.without)).toFixed(3) }));
