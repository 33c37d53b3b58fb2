// Tool calls through `ember serve` with the official OpenAI Node.js client
// (issue 41, part 4), on a synthetic qwen2-family model with random weights
// (`ember synth --arch qwen2`: its built-in chatml template, Hermes calls).
// tool_choice "required" or a named function holds the output to the call
// grammar, so even random weights give a parseable call whose arguments
// satisfy the schema: checked not streamed and streamed, with
// parallel_tool_calls off, then a follow-up carrying the assistant's
// tool_calls and the tool results; streamed arguments arrive in pieces
// (with the client and as raw events); the legacy functions/function_call;
// malformed tools are 400 naming them.
//
//   node openai_tools_test.mjs EMBER CLIENT_DIR SCRATCH_DIR
// Exit 77 (CTest: skipped) when the client is missing, unless
// EMBER_REQUIRE_TEST_DATA=1.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [ember, clientDir, scratch] = process.argv.slice(2);
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

function startServer(model, args) {
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

const CITIES = ['Oslo', 'Lima', 'Kyoto'];
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city for the next days',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', enum: CITIES },
          days: { type: 'integer', minimum: 1, maximum: 3 },
          unit: { type: 'string', enum: ['C', 'F'] },
        },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'],
                    additionalProperties: false },
    },
  },
];

// A call as the schema of its function demands.
function checkCall(call, what, only) {
  check(typeof call.id === 'string' && call.id.startsWith('call_'), `${what}: id ${call.id}`);
  check(call.type === 'function', `${what}: type ${call.type}`);
  const name = call.function.name;
  check(only ? name === only : name === 'get_weather' || name === 'get_time', `${what}: name ${name}`);
  let args = null;
  try { args = JSON.parse(call.function.arguments); } catch { /* checked below */ }
  check(args !== null && typeof args === 'object', `${what}: arguments parse: ${call.function.arguments}`);
  if (!args) return;
  if (name === 'get_weather') {
    check(CITIES.includes(args.city), `${what}: city ${args.city}`);
    check(Number.isInteger(args.days) && args.days >= 1 && args.days <= 3, `${what}: days ${args.days}`);
    check(args.unit === undefined || args.unit === 'C' || args.unit === 'F', `${what}: unit ${args.unit}`);
    check(Object.keys(args).every((k) => ['city', 'days', 'unit'].includes(k)), `${what}: keys ${Object.keys(args)}`);
  } else {
    check(args.zone === 'UTC' || args.zone === 'CET', `${what}: zone ${args.zone}`);
  }
}

// The raw server-sent events of a required call: each call's first chunk
// carries id, type and name; its arguments follow in more than one chunk,
// and joined they are the call's JSON arguments.
async function rawStream(port, messages) {
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 400,
                           seed: 13, stream: true }) });
  const text = await res.text();
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]');
  const calls = [];
  let pieces = 0;
  for (const e of events) {
    const chunk = JSON.parse(e.slice(6));
    for (const t of (chunk.choices[0] && chunk.choices[0].delta.tool_calls) || []) {
      if (!calls[t.index]) {
        check(typeof t.id === 'string' && t.type === 'function' && t.function.name,
              `raw SSE: the first chunk of call ${t.index} names it: ${JSON.stringify(t)}`);
        calls[t.index] = { id: t.id, type: t.type, function: { name: t.function.name, arguments: '' } };
      } else {
        check(t.id === undefined && t.function.name === undefined, `raw SSE: later chunks carry arguments only`);
      }
      if (t.function.arguments) {
        calls[t.index].function.arguments += t.function.arguments;
        ++pieces;
      }
    }
  }
  check(calls.length === 1, `raw SSE: one call (parallel_tool_calls false), got ${calls.length}`);
  check(pieces >= 2, `raw SSE: arguments in ${pieces} chunks`);
  calls.forEach((call, i) => checkCall(call, `raw SSE call ${i}`));
}

async function main() {
  const model = path.join(scratch, 'qwen2-synth.ember');
  execFileSync(ember, ['synth', '--shape', 'tiny', '--arch', 'qwen2', '-o', model], { stdio: 'ignore' });
  const srv = await startServer(model, ['--ctx', '2048']);
  const client = new OpenAI({ apiKey: 'unused', baseURL: `http://127.0.0.1:${srv.port}/v1`, maxRetries: 0 });
  const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  try {
    // Required, not streamed: calls only, content null.
    const ids = new Set();
    let first = null;
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({ messages, tools, tool_choice: 'required', max_tokens: 400,
                                                       temperature: 1, seed });
      const c = r.choices[0];
      check(c.finish_reason === 'tool_calls', `required seed ${seed}: finish_reason ${c.finish_reason}`);
      check(c.message.content === null, `required seed ${seed}: content null, got ${JSON.stringify(c.message.content)}`);
      const calls = c.message.tool_calls || [];
      check(calls.length >= 1, `required seed ${seed}: calls ${calls.length}`);
      calls.forEach((call, i) => { checkCall(call, `required seed ${seed} call ${i}`); ids.add(call.id); });
      if (!first) first = r;
    }
    check(ids.size >= 3, `call ids are distinct: ${ids.size}`);

    // A named function, one call.
    const named = await client.chat.completions.create({
      messages, tools, tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false,
      max_tokens: 200, seed: 7 });
    const nc = named.choices[0];
    check(nc.finish_reason === 'tool_calls', `named: finish_reason ${nc.finish_reason}`);
    check((nc.message.tool_calls || []).length === 1, `named: one call, got ${JSON.stringify(nc.message.tool_calls)}`);
    if (nc.message.tool_calls) checkCall(nc.message.tool_calls[0], 'named call', 'get_time');

    // Streamed: delta.tool_calls gathered by index.
    const stream = await client.chat.completions.create({ messages, tools, tool_choice: 'required', max_tokens: 400,
                                                          seed: 11, stream: true });
    const got = [];
    let finish = null, content = '', argChunks = 0;
    for await (const ch of stream) {
      if (!ch.choices.length) continue;
      const d = ch.choices[0].delta;
      content += d.content || '';
      for (const t of d.tool_calls || []) {
        if (!got[t.index]) got[t.index] = { id: t.id, type: t.type, function: { name: '', arguments: '' } };
        if (t.function && t.function.name) got[t.index].function.name += t.function.name;
        if (t.function && t.function.arguments) {
          got[t.index].function.arguments += t.function.arguments;
          ++argChunks;
        }
      }
      if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
    }
    check(finish === 'tool_calls', `streamed: finish_reason ${finish}`);
    check(content === '', `streamed: no content, got ${JSON.stringify(content)}`);
    check(got.length >= 1, `streamed: calls ${got.length}`);
    got.forEach((call, i) => checkCall(call, `streamed call ${i}`));
    // The arguments came in pieces as they were generated, not at the end.
    check(argChunks > got.length, `streamed: arguments in pieces: ${argChunks} chunks for ${got.length} calls`);
    await rawStream(srv.port, messages);
    // The client's own accumulation (finalChatCompletion) agrees.
    const runner = client.beta && client.beta.chat && client.beta.chat.completions.stream
      ? client.beta.chat.completions.stream({ messages, tools, tool_choice: 'required', max_tokens: 400, seed: 11 })
      : null;
    if (runner) {
      const final = await runner.finalChatCompletion();
      const calls = final.choices[0].message.tool_calls || [];
      check(calls.length === got.length, `client's stream helper: ${calls.length} calls, expected ${got.length}`);
      calls.forEach((call, i) => checkCall(call, `stream helper call ${i}`));
    }

    // The follow-up: the assistant's calls and one tool result per call.
    const assistant = first.choices[0].message;
    const follow = [...messages, assistant,
                    ...assistant.tool_calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: '{"temp": -3}' }))];
    const r2 = await client.chat.completions.create({ messages: follow, tools, max_tokens: 8, seed: 3 });
    check(['stop', 'length', 'tool_calls'].includes(r2.choices[0].finish_reason),
          `follow-up: finish_reason ${r2.choices[0].finish_reason}`);
    check(r2.usage.prompt_tokens > first.usage.prompt_tokens + 20,
          `follow-up: the calls and results are in the prompt (${r2.usage.prompt_tokens} vs ${first.usage.prompt_tokens})`);
    const r3 = await client.chat.completions.create({ messages: follow, tools, tool_choice: 'none', max_tokens: 8 });
    check(!r3.choices[0].message.tool_calls, 'tool_choice none: no calls');

    // The legacy functions / function_call: read as tools / tool_choice.
    const functions = tools.map((t) => t.function);
    const legacy = await client.chat.completions.create({
      messages, functions, function_call: { name: 'get_time' }, max_tokens: 200, seed: 5 });
    const lc = legacy.choices[0];
    check(lc.finish_reason === 'tool_calls', `functions: finish_reason ${lc.finish_reason}`);
    check((lc.message.tool_calls || []).length === 1, `functions: one call, got ${JSON.stringify(lc.message)}`);
    if (lc.message.tool_calls) checkCall(lc.message.tool_calls[0], 'functions call', 'get_time');

    // Refusals naming the field.
    const refusals = [
      [{ tools: [{ type: 'retrieval' }] }, 'tools'],
      [{ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ messages: [...messages, { role: 'tool', content: 'x' }] }, 'messages'],
      [{ tools, functions: tools.map((t) => t.function) }, 'functions'],
    ];
    for (const [extra, param] of refusals) {
      let err = null;
      try {
        await client.chat.completions.create({ messages, max_tokens: 4, ...extra });
      } catch (e) { err = e; }
      check(err && err.status === 400 && err.param === param,
            `${JSON.stringify(extra).slice(0, 60)}: 400 naming ${param}, got ${err && err.status} ${err && err.param}`);
    }
  } finally {
    srv.proc.kill('SIGTERM');
    await srv.exit;
  }
}

try {
  await main();
} catch (e) {
  ++failures;
  console.error(`FAIL: ${e.stack || e}`);
}
console.log(`${checks} checks, ${failures} failed`);
process.exit(failures ? 1 : 0);
