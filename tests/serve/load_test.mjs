// A bounded load on `ember serve` over localhost (issue 15): 200 requests,
// 16 at a time, through the real HTTP server (batched scheduler, prefix
// cache): completions and chat, streamed and not, every fifth client
// leaving early (mid-stream or before the answer). Every staying client gets
// a complete answer (greedy: exactly `ember run`'s text) or a clear error
// (an OpenAI-style JSON body); the server stays up, its KV stays within the
// plan, its peak resident memory within the printed plan (private + mapped
// weights + a fixed allowance for the process itself), and SIGTERM drains it
// (exit 0). Plain Node.js, no client library.
//
//   node load_test.mjs EMBER MODEL
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';

const [ember, model] = process.argv.slice(2);
let failures = 0;
let checks = 0;
function check(cond, what) {
  ++checks;
  if (!cond) {
    ++failures;
    console.error(`FAIL: ${what}`);
  }
}

function startServer(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(ember, ['serve', '-m', model, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const exit = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]), exit, stderr: () => err });
    });
    proc.on('exit', (code) => reject(new Error(`ember serve exited (${code}) before listening:\n${err}`)));
  });
}

// One request; resolves with { status, body } or { aborted: true }. leave:
// 'none', 'early' (before any answer) or 'stream' (after the first chunk).
function post(port, path, payload, leave = 'none') {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path,
                               headers: { 'Content-Type': 'application/json' } }, (res) => {
      let data = '';
      res.on('data', (d) => {
        data += d;
        if (leave === 'stream') {
          req.destroy();
          resolve({ aborted: true });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
      res.on('error', () => resolve({ aborted: true }));
    });
    req.on('error', (e) => resolve(leave === 'none' ? { status: 0, body: String(e) } : { aborted: true }));
    req.end(JSON.stringify(payload));
    if (leave === 'early') setTimeout(() => { req.destroy(); resolve({ aborted: true }); }, 2);
  });
}

function get(port, path) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    }).on('error', reject);
  });
}

// The text of a server-sent event stream, and whether it ended properly.
function sseText(body, chat) {
  let text = '', done = false, finish = null;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const data = line.slice(6);
    if (data === '[DONE]') { done = true; continue; }
    const j = JSON.parse(data);
    if (j.error) return { error: j.error };
    const c = j.choices && j.choices[0];
    if (!c) continue;
    text += chat ? (c.delta.content || '') : c.text;
    if (c.finish_reason) finish = c.finish_reason;
  }
  return { text, done, finish };
}

function runGreedy(prompt, n) {
  const out = execFileSync(ember, ['run', '-m', model, '-p', prompt, '-n', String(n), '--ctx', '256'],
                           { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  return out.slice(prompt.length, out.length - 1);
}

function metric(text, name) {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

function mibOf(stderr, label) {
  const m = stderr.match(new RegExp(`${label} ([0-9.]+) MiB`));
  return m ? Number(m[1]) : NaN;
}

const system = 'Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog. ';
const prompts = ['One day', 'The sun was', 'Tom had a', 'In the park', 'A little bird', 'She saw a'].map((p) => system + p);
const N = 200, CONCURRENT = 16, MAX_TOKENS = 24;

const start = Date.now();
const expected = prompts.map((p) => runGreedy(p, MAX_TOKENS));
check(expected.every((t) => t.length > 0), 'ember run gave text for every prompt');

const srv = await startServer(['--parallel', '8', '--ctx', '256', '--max-queue', '256']);
try {
  let next = 0;
  const tally = { complete: 0, errors: 0, left: 0, wrong: [] };
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const p = i % prompts.length;
      const stream = i % 3 === 0;
      const chat = i % 11 === 5;
      const leave = i % 5 === 4 ? (i % 10 === 4 ? 'early' : 'stream') : 'none';
      const payload = chat
        ? { messages: [{ role: 'user', content: prompts[p] }], max_tokens: MAX_TOKENS, temperature: 0, stream }
        : { prompt: prompts[p], max_tokens: MAX_TOKENS, temperature: 0, stream: leave === 'stream' || stream };
      const r = await post(srv.port, chat ? '/v1/chat/completions' : '/v1/completions', payload, leave);
      if (r.aborted) { ++tally.left; continue; }
      if (r.status !== 200) {
        let j = null;
        try { j = JSON.parse(r.body); } catch { /* below */ }
        check(j && j.error && j.error.message, `request ${i}: status ${r.status} without an error body: ${r.body}`);
        ++tally.errors;
        continue;
      }
      let text, finish;
      if (payload.stream) {
        const s = sseText(r.body, chat);
        check(s.done && !s.error, `request ${i}: the stream ends with [DONE]: ${r.body.slice(-200)}`);
        text = s.text;
        finish = s.finish;
      } else {
        const j = JSON.parse(r.body);
        text = chat ? j.choices[0].message.content : j.choices[0].text;
        finish = j.choices[0].finish_reason;
        check(j.usage && j.usage.completion_tokens > 0, `request ${i}: usage`);
      }
      check(finish === 'length' || finish === 'stop', `request ${i}: finish_reason ${finish}`);
      if (!chat && text !== expected[p]) tally.wrong.push(i);
      if (chat) check(text.length > 0, `request ${i}: chat text`);
      ++tally.complete;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT }, worker));
  check(tally.complete + tally.errors + tally.left === N, `every request accounted for: ${JSON.stringify(tally)}`);
  check(tally.left >= 30, `clients left early: ${tally.left}`);
  check(tally.complete >= 150, `complete answers: ${tally.complete}`);
  check(tally.wrong.length === 0, `greedy answers differ from ember run: requests ${tally.wrong}`);

  // (stderr, read here: it may come after stdout's "listening")
  check(/scheduler: batched/.test(srv.stderr()), `the batched scheduler runs: ${srv.stderr()}`);
  const health = await get(srv.port, '/health');
  check(health.status === 200, 'the server is up after the load');
  // Let the scheduler notice the last departures.
  for (let k = 0; k < 50 && JSON.parse((await get(srv.port, '/health')).body).active > 0; ++k) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const h = JSON.parse((await get(srv.port, '/health')).body);
  check(h.active === 0 && h.queued === 0, `idle after the load: ${JSON.stringify(h)}`);
  const m = (await get(srv.port, '/metrics')).body;
  const inUse = metric(m, 'ember_kv_bytes_in_use'), planned = metric(m, 'ember_kv_bytes_planned');
  check(inUse > 0 && inUse <= planned, `KV in use ${inUse} within the plan ${planned}`);
  check(metric(m, 'ember_prefix_cache_hits_total') > 100, `prefix cache hits: ${metric(m, 'ember_prefix_cache_hits_total')}`);
  check(metric(m, 'ember_prefix_cache_tokens_total') > 0, 'prefix cache tokens');
  const ok200 = metric(m, 'ember_requests_total\\{route="/v1/completions",status="200"\\}');
  check(ok200 >= 150, `completions answered 200: ${ok200}`);

  // Peak resident memory: the plan's private bytes and mapped weights, plus
  // an allowance for the process (code, libc, connection threads, buffers).
  const privateMiB = mibOf(srv.stderr(), 'private'), mappedMiB = mibOf(srv.stderr(), 'weights mapped');
  check(privateMiB > 0 && mappedMiB > 0, `the plan is printed: ${srv.stderr()}`);
  const status = fs.readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8');
  const hwm = Number((status.match(/VmHWM:\s+(\d+) kB/) || [])[1]) / 1024;
  if (process.env.EMBER_SANITIZED) {
    // ASan/TSan: shadow memory and quarantine are no part of the plan.
    console.log(`peak RSS ${hwm.toFixed(1)} MiB not checked (built with ${process.env.EMBER_SANITIZED})`);
  } else {
    check(hwm > 0 && hwm <= privateMiB + mappedMiB + 64, `peak RSS ${hwm.toFixed(1)} MiB within the plan ` +
          `(${privateMiB} + ${mappedMiB} MiB + 64 MiB for the process)`);
  }

  srv.proc.kill('SIGTERM');
  const { code } = await srv.exit;
  check(code === 0, `ember serve exits 0 after SIGTERM (got ${code})`);
  console.log(`load: ${JSON.stringify({ ...tally, wrong: tally.wrong.length })}, peak RSS ${hwm.toFixed(1)} MiB, ` +
              `${((Date.now() - start) / 1000).toFixed(1)} s`);
} catch (e) {
  ++failures;
  console.error(`FAIL: ${e.stack || e}`);
} finally {
  srv.proc.kill('SIGKILL');
}
console.log(`${checks} checks, ${failures} failed`);
process.exit(failures ? 1 : 0);
