// `ember serve` driven by the official OpenAI Node.js client (issue 15):
// models, completions and chat, streaming and not, HTTPS with a self-signed
// CA made here, and the error cases (401, 400, 404, 405, 413, 429) with raw
// requests; 8 concurrent greedy requests each give the text they give
// alone; a cached prompt prefix (usage cached_tokens) gives the same text; a
// client that disconnects; response_format json_schema and json_object
// (the content parses and follows the schema; a refused keyword is a 400);
// SIGTERM drains and exits 0.
//
//   node openai_client_test.mjs EMBER MODEL CLIENT_DIR SCRATCH_DIR
// CLIENT_DIR holds node_modules/openai (tools/scripts/fetch_openai_client.sh).
// Exit 77 (CTest: skipped, with the reason printed) when it is missing,
// unless EMBER_REQUIRE_TEST_DATA=1, which makes that a failure.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';

const [ember, model, clientDir, scratch] = process.argv.slice(2);
const clientPkg = path.join(clientDir, 'node_modules', 'openai', 'package.json');
if (!fs.existsSync(clientPkg)) {
  const msg = `the openai client is not in ${clientDir}: run tools/scripts/fetch_openai_client.sh`;
  if (process.env.EMBER_REQUIRE_TEST_DATA === '1') {
    console.error(`FAIL: ${msg} (EMBER_REQUIRE_TEST_DATA=1)`);
    process.exit(1);
  }
  console.error(`SKIP: ${msg}`);
  process.exit(77);
}
const OpenAI = createRequire(clientPkg)('openai');
fs.mkdirSync(scratch, { recursive: true });

let failures = 0;
let checks = 0;
function check(cond, what) {
  ++checks;
  if (!cond) {
    ++failures;
    console.error(`FAIL: ${what}`);
  }
}
function eq(a, b, what) {
  check(JSON.stringify(a) === JSON.stringify(b), `${what}: got ${JSON.stringify(a)}, expected ${JSON.stringify(b)}`);
}

// Starts `ember serve` and resolves with { proc, port, exit } once it listens.
function startServer(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(ember, ['serve', '-m', model, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const exit = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on https?:\/\/[^:]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]), exit, stderr: () => err });
    });
    proc.on('exit', (code) => reject(new Error(`ember serve exited (${code}) before listening:\n${err}`)));
  });
}

// A raw HTTP request; resolves with { status, body, headers }.
function raw(port, method, p, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: data, headers: res.headers }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
// Bytes on a socket, the whole answer back (the server closes after an error).
function rawBytes(port, bytes) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(bytes));
    let data = '';
    s.on('data', (d) => { data += d; });
    s.on('end', () => resolve(data));
    s.on('error', reject);
  });
}
function errorOf(res, status, what) {
  eq(res.status, status, `${what}: status`);
  let j = null;
  try { j = JSON.parse(res.body); } catch { /* checked below */ }
  check(j && j.error && typeof j.error.message === 'string' && j.error.message.length > 0,
        `${what}: an OpenAI-style error body, got ${res.body}`);
  return j;
}

// The text `ember run` gives greedily: what the server must give too.
function runGreedy(prompt, n) {
  const out = execFileSync(ember, ['run', '-m', model, '-p', prompt, '-n', String(n), '--ctx', '256'],
                           { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  // `ember run` echoes the prompt and ends with a newline.
  return out.slice(prompt.length, out.length - 1);
}

const KEY = 'sk-ember-test-key';
const modelName = path.basename(model);

async function mainTests() {
  const srv = await startServer(['--parallel', '4', '--ctx', '256', '--api-key', KEY, '--max-body', '4096']);
  const base = `http://127.0.0.1:${srv.port}/v1`;
  const client = new OpenAI({ apiKey: KEY, baseURL: base, maxRetries: 0 });
  try {
    const models = await client.models.list();
    eq(models.data.map((m) => m.id), [modelName], 'models.list');

    // Completions, not streamed: the text of `ember run`, and the usage.
    const prompt = 'Once upon a time';
    const expected = runGreedy(prompt, 24);
    check(expected.length > 0, 'ember run gave text');
    const c = await client.completions.create({ model: modelName, prompt, max_tokens: 24, temperature: 0 });
    eq(c.object, 'text_completion', 'completion object');
    eq(c.choices[0].text, expected, 'completion text = ember run -n 24');
    eq(c.choices[0].finish_reason, 'length', 'completion finish_reason');
    eq(c.usage.completion_tokens, 24, 'usage.completion_tokens');
    check(c.usage.prompt_tokens > 1, `usage.prompt_tokens ${c.usage.prompt_tokens}`);
    eq(c.usage.total_tokens, c.usage.prompt_tokens + 24, 'usage.total_tokens');
    eq(c.usage.prompt_tokens_details && c.usage.prompt_tokens_details.cached_tokens, 0, 'cached_tokens');

    // Streamed: the same text, in chunks, the last with the finish reason.
    let streamed = '', finish = null, chunks = 0;
    for await (const ch of await client.completions.create({ model: modelName, prompt, max_tokens: 24, temperature: 0,
                                                             stream: true })) {
      ++chunks;
      streamed += ch.choices[0].text;
      if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
    }
    eq(streamed, expected, 'streamed completion text');
    eq(finish, 'length', 'streamed finish_reason');
    check(chunks >= 2, `streamed in ${chunks} chunks`);

    // A stop string: the text ends before it, finish_reason "stop".
    const s = await client.completions.create({ model: modelName, prompt, max_tokens: 60, temperature: 0, stop: ['.'] });
    const full = runGreedy(prompt, 60);
    eq(s.choices[0].finish_reason, 'stop', 'stop: finish_reason');
    eq(s.choices[0].text, full.slice(0, full.indexOf('.')), 'stop: the text before the first "."');

    // Sampling with a seed is repeatable.
    const sampled = [];
    for (let i = 0; i < 2; ++i) {
      sampled.push((await client.completions.create({ model: modelName, prompt, max_tokens: 16, temperature: 0.9,
                                                      top_p: 0.9, seed: 7 })).choices[0].text);
    }
    eq(sampled[0], sampled[1], 'the same seed, the same text');

    // Chat, streamed and not: the same reply.
    const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }];
    const chat = await client.chat.completions.create({ model: modelName, messages, max_tokens: 20, temperature: 0 });
    eq(chat.object, 'chat.completion', 'chat object');
    eq(chat.choices[0].message.role, 'assistant', 'chat role');
    check(chat.choices[0].message.content.length > 0, 'chat content not empty');
    eq(chat.choices[0].finish_reason, 'length', 'chat finish_reason');
    let chatStreamed = '', role = null, usage = null;
    for await (const ch of await client.chat.completions.create({ model: modelName, messages, max_tokens: 20,
        temperature: 0, stream: true, stream_options: { include_usage: true } })) {
      if (ch.usage) usage = ch.usage;
      if (!ch.choices.length) continue;
      if (ch.choices[0].delta.role) role = ch.choices[0].delta.role;
      chatStreamed += ch.choices[0].delta.content || '';
    }
    eq(chatStreamed, chat.choices[0].message.content, 'streamed chat = chat');
    eq(role, 'assistant', 'streamed chat role');
    eq(usage && usage.completion_tokens, 20, 'streamed chat usage');

    // Log-probabilities (chat and completions shapes), logit bias and the
    // presence / frequency penalties, honoured through the client.
    const lp = await client.chat.completions.create({ model: modelName, messages, max_tokens: 6, temperature: 0,
                                                      logprobs: true, top_logprobs: 3 });
    const content = lp.choices[0].logprobs && lp.choices[0].logprobs.content;
    check(Array.isArray(content) && content.length === 6, `chat logprobs: one entry per token, got ${JSON.stringify(content)}`);
    eq(content.map((t) => t.token).join(''), lp.choices[0].message.content, 'chat logprobs: the tokens spell the reply');
    for (const t of content) {
      check(t.logprob <= 0 && t.top_logprobs.length === 3, `chat logprobs entry ${JSON.stringify(t)}`);
      eq(t.top_logprobs[0].token, t.token, 'greedy: the token is the most likely one');
      check(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob, 'top_logprobs most likely first');
    }
    const clp = await client.completions.create({ model: modelName, prompt, max_tokens: 5, temperature: 0, logprobs: 2 });
    const legacy = clp.choices[0].logprobs;
    check(legacy && legacy.tokens.length === 5 && legacy.token_logprobs.length === 5 && legacy.top_logprobs.length === 5,
          `completions logprobs: ${JSON.stringify(legacy)}`);
    eq(legacy.text_offset[0], 0, 'completions logprobs: the first offset');
    eq(legacy.tokens.join(''), clp.choices[0].text, 'completions logprobs: the tokens spell the text');
    // A bias of +100 on the greedy run's second token makes it every token.
    const forcedToken = legacy.tokens[1];
    // (`ember tokenize` prints ids separated by spaces; the piece's own id is the last.)
    const ids = execFileSync(ember, ['tokenize', model, '--text', `x${forcedToken}`], { encoding: 'utf8' })
      .trim().split(/\s+/).map(Number);
    const forcedId = ids[ids.length - 1];
    const biased = await client.completions.create({ model: modelName, prompt, max_tokens: 4, temperature: 0,
                                                     logit_bias: { [forcedId]: 100 }, logprobs: 0 });
    eq(biased.choices[0].logprobs.tokens, Array(4).fill(forcedToken), 'a +100 logit bias makes the token every token');
    const plain60 = await client.completions.create({ model: modelName, prompt, max_tokens: 60, temperature: 0 });
    const penalized = await client.completions.create({ model: modelName, prompt, max_tokens: 60, temperature: 0,
                                                        presence_penalty: 2, frequency_penalty: 2 });
    check(penalized.choices[0].text !== plain60.choices[0].text, 'the penalties change the greedy text');

    // response_format: json_schema (strict) through the client, streamed and
    // not, and json_object: the content parses and has the schema's keys and
    // types; the grammar ends the text (finish_reason "stop"). A keyword
    // ember cannot honour is a 400 the client reports with the message.
    const personSchema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 6 }, age: { type: 'integer', minimum: 0, maximum: 99 },
                    happy: { type: 'boolean' } },
      required: ['name', 'age', 'happy'], additionalProperties: false,
    };
    const checkPerson = (text, what) => {
      let v = null;
      try { v = JSON.parse(text); } catch { /* checked below */ }
      if (!check(v !== null && typeof v === 'object' && !Array.isArray(v), `${what}: JSON.parse gives an object: ${text}`)) return;
      eq(Object.keys(v).sort(), ['age', 'happy', 'name'], `${what}: the keys`);
      check(typeof v.name === 'string' && [...v.name].length <= 6, `${what}: name a string of at most 6: ${text}`);
      check(Number.isInteger(v.age) && v.age >= 0 && v.age <= 99, `${what}: age an integer in [0, 99]: ${text}`);
      check(typeof v.happy === 'boolean', `${what}: happy a boolean: ${text}`);
    };
    const personFormat = { type: 'json_schema', json_schema: { name: 'person', schema: personSchema, strict: true } };
    let t0 = Date.now();
    const js = await client.chat.completions.create({ model: modelName, messages, max_tokens: 200, temperature: 0,
                                                      response_format: personFormat });
    const firstMs = Date.now() - t0;
    eq(js.choices[0].finish_reason, 'stop', 'json_schema: the grammar ends the text');
    checkPerson(js.choices[0].message.content, 'json_schema chat');
    check(js.usage.completion_tokens > 5, `json_schema: usage counts the tokens (${js.usage.completion_tokens})`);
    t0 = Date.now();
    let jsStreamed = '', jsFinish = null;
    for await (const ch of await client.chat.completions.create({ model: modelName, messages, max_tokens: 200,
        temperature: 0, stream: true, response_format: personFormat })) {
      if (!ch.choices.length) continue;
      jsStreamed += ch.choices[0].delta.content || '';
      if (ch.choices[0].finish_reason) jsFinish = ch.choices[0].finish_reason;
    }
    const againMs = Date.now() - t0;
    eq(jsStreamed, js.choices[0].message.content, 'json_schema streamed = not streamed');
    eq(jsFinish, 'stop', 'json_schema streamed: finish_reason');
    console.log(`json_schema: first request ${firstMs} ms (grammar compiled), the same schema again ${againMs} ms`);
    // Sampled, on /v1/completions: still the schema's.
    for (const seed of [1, 2, 3]) {
      const sc = await client.completions.create({ model: modelName, prompt, max_tokens: 200, temperature: 1, seed,
                                                   response_format: personFormat });
      if (sc.choices[0].finish_reason === 'stop') checkPerson(sc.choices[0].text, `json_schema sampled, seed ${seed}`);
      else check(sc.choices[0].text.startsWith('{'), `json_schema sampled, seed ${seed}: a prefix of JSON`);
    }
    // json_object: stories260K writes a story into the first string it
    // opens (a prefix of an object until max_tokens); with '}' biased to be
    // every token the grammar allows, the object closes at once: "{}" where
    // the bias alone would give "}}}}".
    const jo = await client.chat.completions.create({ model: modelName, messages, max_tokens: 40, temperature: 0,
                                                      response_format: { type: 'json_object' } });
    check(/^\{\s*("|\})/.test(jo.choices[0].message.content), `json_object: an object's start: ${jo.choices[0].message.content}`);
    const braceIds = execFileSync(ember, ['tokenize', model, '--text', 'x}'], { encoding: 'utf8' }).trim().split(/\s+/);
    const brace = Number(braceIds[braceIds.length - 1]);
    const closed = await client.chat.completions.create({ model: modelName, messages, max_tokens: 40, temperature: 0,
                                                          logit_bias: { [brace]: 100 },
                                                          response_format: { type: 'json_object' } });
    let joValue = null;
    try { joValue = JSON.parse(closed.choices[0].message.content); } catch { /* checked below */ }
    eq(closed.choices[0].finish_reason, 'stop', 'json_object: finish_reason');
    check(joValue !== null && typeof joValue === 'object' && !Array.isArray(joValue),
          `json_object: JSON.parse gives an object: ${closed.choices[0].message.content}`);
    const unconstrained = await client.chat.completions.create({ model: modelName, messages, max_tokens: 4,
                                                                temperature: 0, logit_bias: { [brace]: 100 } });
    eq(unconstrained.choices[0].message.content, '}}}}', 'the bias alone: every token "}"');
    let refusedSchema = null;
    try {
      await client.chat.completions.create({ model: modelName, messages, max_tokens: 8, response_format: {
        type: 'json_schema', json_schema: { name: 'tags', strict: true, schema: { type: 'object', properties: {
          tags: { type: 'array', items: { type: 'string' }, uniqueItems: true } } } } } });
    } catch (e) { refusedSchema = e; }
    check(refusedSchema && refusedSchema.status === 400, `uniqueItems: 400, got ${refusedSchema && refusedSchema.status}`);
    check(refusedSchema && /uniqueItems/.test(refusedSchema.message) && /\/properties\/tags/.test(refusedSchema.message),
          `uniqueItems: the client's error carries the message: ${refusedSchema && refusedSchema.message}`);
    eq(refusedSchema && [refusedSchema.param, refusedSchema.code], ['response_format', 'unsupported_schema'],
       'uniqueItems: param and code');
    let badType = null;
    try {
      await client.chat.completions.create({ model: modelName, messages, response_format: { type: 'xml' } });
    } catch (e) { badType = e; }
    check(badType && badType.status === 400 && /response_format\.type/.test(badType.message),
          `an unknown response_format type: 400 naming it: ${badType && badType.message}`);

    // The prefix cache: a prompt that begins as an earlier one reuses its
    // positions (usage.prompt_tokens_details.cached_tokens) and gives the
    // text `ember run` gives it from scratch.
    const story = 'Once upon a time, there was a little dog named Max. Max liked to run in the park and play. ';
    await client.completions.create({ model: modelName, prompt: story + 'One day', max_tokens: 8, temperature: 0 });
    const cachedRun = await client.completions.create({ model: modelName, prompt: story + 'The sun', max_tokens: 24,
                                                        temperature: 0 });
    const cachedTokens = cachedRun.usage.prompt_tokens_details && cachedRun.usage.prompt_tokens_details.cached_tokens;
    check(cachedTokens >= 16 && cachedTokens < cachedRun.usage.prompt_tokens,
          `a shared prefix is reused: cached_tokens ${cachedTokens} of ${cachedRun.usage.prompt_tokens}`);
    eq(cachedRun.choices[0].text, runGreedy(story + 'The sun', 24), 'the text with a cached prefix = ember run');

    // 8 concurrent greedy requests: each the text it gives alone.
    const prompts = ['Once upon a time', 'The cat', 'Lily and Ben', 'One day', 'The sun was', 'Tom had a',
                     'In the park', 'A little bird'];
    const alone = [];
    for (const p of prompts) {
      alone.push((await client.completions.create({ model: modelName, prompt: p, max_tokens: 40, temperature: 0 }))
        .choices[0].text);
    }
    const together = await Promise.all(prompts.map((p) =>
      client.completions.create({ model: modelName, prompt: p, max_tokens: 40, temperature: 0 })));
    eq(together.map((r) => r.choices[0].text), alone, '8 concurrent requests = each alone');

    // Errors, through the client and raw.
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: base, maxRetries: 0 });
    let status = 0;
    try { await bad.models.list(); } catch (e) { status = e.status; }
    eq(status, 401, 'a wrong key: 401 through the client');
    errorOf(await raw(srv.port, 'GET', '/v1/models'), 401, 'no key');
    eq((await raw(srv.port, 'GET', '/health')).status, 200, '/health needs no key');
    const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
    const e400 = errorOf(await raw(srv.port, 'POST', '/v1/completions', { body: '{"prompt": ', headers: auth }), 400,
                         'malformed JSON');
    eq(e400 && e400.error.type, 'invalid_request_error', 'error type');
    const eField = errorOf(await raw(srv.port, 'POST', '/v1/completions',
                                     { body: '{"prompt":"x","temperature":"hot"}', headers: auth }), 400, 'a bad field');
    check(eField && eField.error.message.includes('temperature'), 'the message names the field');
    errorOf(await raw(srv.port, 'POST', '/v1/chat/completions', { body: '{"messages":[]}', headers: auth }), 400,
            'no messages');
    const long = 'x'.repeat(3000);
    errorOf(await raw(srv.port, 'POST', '/v1/completions', { body: JSON.stringify({ prompt: long + long }), headers: auth }),
            413, 'a body over --max-body');
    errorOf(await raw(srv.port, 'GET', '/v1/nothing', { headers: auth }), 404, 'an unknown route');
    errorOf(await raw(srv.port, 'GET', '/v1/completions', { headers: auth }), 405, 'the wrong method');
    const garbage = await rawBytes(srv.port, 'NONSENSE\r\n\r\n');
    check(/^HTTP\/1\.1 400 /.test(garbage) && garbage.includes('"error"'), `malformed HTTP: 400, got ${garbage}`);
    const hugeHeader = await rawBytes(srv.port, `GET /health HTTP/1.1\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`);
    check(/^HTTP\/1\.1 431 /.test(hugeHeader), `headers over the limit: 431, got ${hugeHeader.slice(0, 40)}`);

    // A client that leaves mid-stream: its request is cancelled, the server stays up.
    await new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/v1/completions',
                                 headers: auth }, (res) => {
        res.once('data', () => { req.destroy(); resolve(); });
      });
      req.on('error', () => {});
      req.end(JSON.stringify({ prompt, max_tokens: 200, stream: true }));
    });
    const after = await client.completions.create({ model: modelName, prompt, max_tokens: 24, temperature: 0 });
    eq(after.choices[0].text, expected, 'after a disconnect: the server still answers, the same text');

    // A bounded load: 48 requests, 16 at a time, every fourth client leaving
    // after its first chunk. Every other one gets the whole greedy text.
    const outcomes = [];
    let nextJob = 0;
    const worker = async () => {
      while (nextJob < 48) {
        const i = nextJob++;
        if (i % 4 === 3) {
          await new Promise((resolve) => {
            const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/v1/completions',
                                       headers: auth }, (res) => { res.once('data', () => { req.destroy(); resolve(); }); });
            req.on('error', () => resolve());
            req.end(JSON.stringify({ prompt, max_tokens: 200, stream: true }));
          });
          continue;
        }
        const r = await client.completions.create({ model: modelName, prompt, max_tokens: 24, temperature: 0,
                                                    stream: i % 2 === 0 });
        let text = '';
        if (i % 2 === 0) {
          for await (const ch of r) text += ch.choices[0].text;
        } else {
          text = r.choices[0].text;
        }
        outcomes.push(text === expected);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    eq(outcomes.length, 36, 'load: every staying client answered');
    check(outcomes.every((x) => x), 'load: every answer is the whole greedy text');
    eq((await raw(srv.port, 'GET', '/health')).status, 200, 'load: the server is up');

    const metrics = (await raw(srv.port, 'GET', '/metrics', { headers: auth })).body;
    for (const name of ['ember_requests_total{route="/v1/completions",status="200"}', 'ember_generated_tokens_total',
                        'ember_time_to_first_token_seconds_bucket', 'ember_inter_token_latency_seconds_count',
                        'ember_queue_depth', 'ember_kv_bytes_in_use', 'ember_prefix_cache_hits_total',
                        'ember_prefix_cache_tokens_total', 'ember_grammar_cache_hits_total']) {
      check(metrics.includes(name), `/metrics has ${name}`);
    }
    const hits = Number((metrics.match(/^ember_prefix_cache_hits_total (\d+)$/m) || [])[1]);
    check(hits >= 1, `/metrics counts prefix cache hits: ${hits}`);
    const grammarHits = Number((metrics.match(/^ember_grammar_cache_hits_total (\d+)$/m) || [])[1]);
    const grammarMisses = Number((metrics.match(/^ember_grammar_cache_misses_total (\d+)$/m) || [])[1]);
    check(grammarHits >= 4 && grammarMisses === 2,
          `/metrics: the grammar cache: ${grammarHits} hits (the same schema again), ${grammarMisses} misses`);

    // SIGTERM with a stream in flight: it completes, then the server exits 0.
    const drained = new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/v1/completions',
                                 headers: auth }, (res) => {
        let data = '';
        res.once('data', () => srv.proc.kill('SIGTERM'));
        res.on('data', (d) => { data += d; });
        res.on('end', () => resolve(data));
      });
      req.end(JSON.stringify({ prompt, max_tokens: 200, temperature: 0, stream: true }));
    });
    const text = await drained;
    check(text.trimEnd().endsWith('data: [DONE]'), 'the stream in flight at SIGTERM completes');
    const { code } = await srv.exit;
    eq(code, 0, 'ember serve exits 0 after SIGTERM');
  } finally {
    srv.proc.kill('SIGKILL');
  }
}

// 429: one slot, one place in the queue, many requests at once.
async function queueTests() {
  const srv = await startServer(['--parallel', '1', '--max-queue', '1', '--ctx', '256']);
  try {
    const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 240, temperature: 0 });
    const results = await Promise.all(Array.from({ length: 12 }, () =>
      raw(srv.port, 'POST', '/v1/completions', { body, headers: { 'Content-Type': 'application/json' } })));
    const statuses = results.map((r) => r.status);
    check(statuses.every((s) => s === 200 || s === 429), `only 200 and 429: ${statuses}`);
    check(statuses.filter((s) => s === 200).length >= 2, `a slot and the queue were served: ${statuses}`);
    const limited = results.find((r) => r.status === 429);
    check(limited !== undefined, `a full queue gives 429: ${statuses}`);
    if (limited) errorOf(limited, 429, 'queue full');
  } finally {
    srv.proc.kill('SIGTERM');
    await srv.exit;
  }
}

// HTTPS with a CA made here (openssl), given to the client's agent.
async function tlsTests() {
  const o = (...a) => execFileSync('openssl', a, { cwd: scratch, stdio: ['ignore', 'ignore', 'pipe'] });
  o('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1',
    '-subj', '/CN=ember test CA');
  o('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(path.join(scratch, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  o('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem',
    '-days', '1', '-extfile', 'san.ext');
  const srv = await startServer(['--ctx', '256', '--tls-cert', path.join(scratch, 'server.pem'),
                                 '--tls-key', path.join(scratch, 'server.key')]);
  try {
    const ca = fs.readFileSync(path.join(scratch, 'ca.pem'));
    const client = new OpenAI({ apiKey: 'unused', baseURL: `https://127.0.0.1:${srv.port}/v1`, maxRetries: 0,
                                httpAgent: new https.Agent({ ca }) });
    eq((await client.models.list()).data.map((m) => m.id), [modelName], 'HTTPS models.list');
    const c = await client.completions.create({ model: modelName, prompt: 'Once upon a time', max_tokens: 24,
                                                temperature: 0 });
    eq(c.choices[0].text, runGreedy('Once upon a time', 24), 'HTTPS completion text');
    let streamed = '';
    for await (const ch of await client.chat.completions.create({ model: modelName, stream: true, max_tokens: 12,
        temperature: 0, messages: [{ role: 'user', content: 'Hello' }] })) {
      if (ch.choices.length) streamed += ch.choices[0].delta.content || '';
    }
    check(streamed.length > 0, 'HTTPS streamed chat');
    // Without the CA the certificate is refused: it really is TLS, checked.
    const untrusted = new OpenAI({ apiKey: 'x', baseURL: `https://127.0.0.1:${srv.port}/v1`, maxRetries: 0 });
    let refused = false;
    try { await untrusted.models.list(); } catch { refused = true; }
    check(refused, 'an unknown CA is refused');
  } finally {
    srv.proc.kill('SIGTERM');
    await srv.exit;
  }
}

try {
  await mainTests();
  await queueTests();
  await tlsTests();
} catch (e) {
  ++failures;
  console.error(`FAIL: ${e.stack || e}`);
}
console.log(`${checks} checks, ${failures} failed`);
process.exit(failures ? 1 : 0);
