// POST /v1/rerank (issue 46) through the real server, plain Node.js: `ember
// serve` on a synthetic reranker (a bert with a classifier head, its file's
// pooling rank) answers query + documents with results[] best first, top_n
// of them, the documents when asked, each score what `ember embed` gives for
// the same query<TAB>document line; /rerank is the same route; every
// malformed request is a 4xx naming the field; /v1/embeddings and the
// completion endpoints are refused on it. A plain bert (an encoder without a
// head) serves /v1/embeddings only (no --embeddings needed) and answers 501
// to /v1/rerank.
//
//   node rerank_test.mjs EMBER
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [ember] = process.argv.slice(2);
let failures = 0;
let checks = 0;
function check(cond, what) {
  ++checks;
  if (!cond) {
    ++failures;
    console.error(`FAIL: ${what}`);
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-rerank-'));
const reranker = path.join(dir, 'reranker.ember');
const bert = path.join(dir, 'bert.ember');
execFileSync(ember, ['synth', '--shape', 'tiny', '--arch', 'bert-reranker', '-o', reranker], { stdio: 'ignore' });
execFileSync(ember, ['synth', '--shape', 'tiny', '--arch', 'bert', '-o', bert], { stdio: 'ignore' });

function startServer(model, args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(ember, ['serve', '-m', model, '--port', '0', '--threads', '2', ...args],
                       { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on https?:\/\/[^:]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]), stderr: () => err });
    });
    proc.on('exit', (code) => reject(new Error(`ember serve exited (${code}) before listening:\n${err}`)));
  });
}

function post(port, route, body) {
  return new Promise((resolve, reject) => {
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: route,
                               headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
                             (res) => {
                               let text = '';
                               res.on('data', (d) => { text += d; });
                               res.on('end', () => resolve({ status: res.statusCode, body: text }));
                             });
    req.on('error', reject);
    req.end(data);
  });
}

const query = 'a cat';
const docs = ['Lily had a cat', 'the sun was hot', 'a cat and a dog', 'once upon a time'];
// What `ember embed` gives for the same pairs (one score per line).
fs.writeFileSync(path.join(dir, 'pairs.tsv'), docs.map((d) => `${query}\t${d}`).join('\n') + '\n');
const cli = JSON.parse(execFileSync(ember, ['embed', '-m', reranker, '-f', path.join(dir, 'pairs.tsv'), '--json'],
                                    { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
check(cli.results.length === docs.length, `ember embed: ${cli.results.length} scores`);
const want = cli.results.map((r) => r.relevance_score);
const close = (a, b) => Math.abs(a - b) <= 1e-5 * (1 + Math.abs(b));

const server = await startServer(reranker, []);
try {
  const r = await post(server.port, '/v1/rerank', { model: 'reranker', query, documents: docs, top_n: 3, return_documents: true });
  check(r.status === 200, `rerank: status ${r.status} (${r.body.slice(0, 300)})`);
  const j = JSON.parse(r.body);
  check(j.results.length === 3, `top_n 3: ${j.results.length} results`);
  for (let k = 0; k < j.results.length; ++k) {
    const { index, relevance_score: s, document } = j.results[k];
    check(Number.isInteger(index) && index >= 0 && index < docs.length, `result ${k}: index ${index}`);
    check(close(s, want[index]), `result ${k}: score ${s}, ember embed gives ${want[index]}`);
    check(document && document.text === docs[index], `result ${k}: its document`);
    if (k) check(s <= j.results[k - 1].relevance_score, `result ${k}: not better than the one before`);
  }
  const best = want.indexOf(Math.max(...want));
  check(j.results[0].index === best, `the best document first: ${j.results[0].index}, expected ${best}`);
  check(j.usage && j.usage.prompt_tokens > 0, 'usage: prompt_tokens');
  // /rerank, every document, no texts; documents as {text} objects.
  const all = JSON.parse((await post(server.port, '/rerank', { query, documents: docs.map((text) => ({ text })) })).body);
  check(all.results.length === docs.length, `no top_n: ${all.results.length} results`);
  check(all.results.every((x) => x.document === undefined), 'no return_documents: no documents');
  check(all.results.every((x) => close(x.relevance_score, want[x.index])), '{text} documents: the same scores');
  const refusals = [
    ['not json', 400, ''],
    [[1, 2], 400, ''],
    [{}, 400, 'query'],
    [{ query: 1, documents: ['a'] }, 400, 'query'],
    [{ query: 'a' }, 400, 'documents'],
    [{ query: 'a', documents: [] }, 400, 'documents'],
    [{ query: 'a', documents: 'a' }, 400, 'documents'],
    [{ query: 'a', documents: [1] }, 400, 'documents'],
    [{ query: 'a', documents: [{ txt: 'a' }] }, 400, 'documents'],
    [{ query: 'a', documents: ['a'], top_n: 0 }, 400, 'top_n'],
    [{ query: 'a', documents: ['a'], top_n: 1.5 }, 400, 'top_n'],
    [{ query: 'a', documents: ['a'], return_documents: 'yes' }, 400, 'return_documents'],
    [{ query: 'a', documents: ['a'], model: 'other' }, 404, 'model'],
    [{ query: 'a', documents: ['a'], model: 7 }, 400, 'model'],
  ];
  for (const [body, status, param] of refusals) {
    const res = await post(server.port, '/v1/rerank', body);
    const what = `refusal ${typeof body === 'string' ? body : JSON.stringify(body)}`;
    check(res.status === status, `${what}: status ${res.status}, expected ${status} (${res.body})`);
    let err = {};
    try { err = JSON.parse(res.body).error || {}; } catch { check(false, `${what}: the body is not JSON`); }
    check(typeof err.message === 'string' && err.message.length > 0, `${what}: a message`);
    if (param) check(err.param === param, `${what}: param ${err.param}, expected ${param}`);
  }
  const emb = await post(server.port, '/v1/embeddings', { input: 'a' });
  check(emb.status === 400 && emb.body.includes('/v1/rerank'), `embeddings on a reranker: ${emb.status} ${emb.body}`);
  const chat = await post(server.port, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] });
  check(chat.status === 501 && chat.body.includes('encoder'), `completions on an encoder: ${chat.status} ${chat.body}`);
} finally {
  server.proc.kill('SIGTERM');
}

// A plain bert: /v1/embeddings without --embeddings, no /v1/rerank.
const plain = await startServer(bert, []);
try {
  const e = await post(plain.port, '/v1/embeddings', { input: ['a cat', 'the sun'] });
  check(e.status === 200, `bert embeddings: ${e.status} ${e.body.slice(0, 200)}`);
  const j = JSON.parse(e.body);
  check(j.data.length === 2 && j.data[0].embedding.length === 64, 'bert embeddings: two vectors of 64 floats');
  const r = await post(plain.port, '/v1/rerank', { query: 'a', documents: ['b'] });
  check(r.status === 501 && r.body.includes('rerank'), `rerank without a head: ${r.status} ${r.body}`);
} finally {
  plain.proc.kill('SIGTERM');
}
fs.rmSync(dir, { recursive: true, force: true });

console.log(`${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
