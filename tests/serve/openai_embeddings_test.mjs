// POST /v1/embeddings (issue 46) driven by the official OpenAI Node.js
// client: `ember serve --embeddings` on stories260K answers
// embeddings.create for a string, an array of strings and token arrays, in
// base64 (the client's default, which it decodes) and float; each vector is
// what `ember embed --json` gives for the same text, L2-normalized; usage
// counts the tokens; and every malformed request is a 4xx naming the field
// (dimensions, input shapes, a mixed array, an id outside the vocabulary,
// an input longer than --embed-ctx, another model). A server started
// without --embeddings answers 501.
//
//   node openai_embeddings_test.mjs EMBER MODEL CLIENT_DIR
// Exit 77 (skipped) without the client, unless EMBER_REQUIRE_TEST_DATA=1.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const [ember, model, clientDir] = process.argv.slice(2);
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

function post(port, body) {
  return new Promise((resolve, reject) => {
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/embeddings',
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

function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

const texts = ['Once upon a time there was a little girl.', 'The cat sat on the mat.', 'Lily and Ben played.'];
// What `ember embed --json` gives for the same texts.
const cli = JSON.parse(execFileSync(ember, ['embed', '-m', model, '--json', '--threads', '2', ...texts.flatMap((t) => ['-p', t])],
                                    { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
check(cli.data.length === 3, 'ember embed: 3 vectors');

const server = await startServer(['--embeddings', '--embed-ctx', '32']);
try {
  const client = new OpenAI({ apiKey: 'none', baseURL: `http://127.0.0.1:${server.port}/v1` });
  // One string; the client asks for base64 and decodes it.
  const one = await client.embeddings.create({ model: path.basename(model), input: texts[0] });
  check(one.data.length === 1 && one.data[0].index === 0, 'one input: one vector at index 0');
  const v = Array.from(one.data[0].embedding);
  check(v.length === cli.data[0].embedding.length && v.length > 0, `one input: ${v.length} floats`);
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  check(Math.abs(norm - 1) < 1e-5, `one input: L2 norm ${norm}`);
  check(cosine(v, cli.data[0].embedding) > 0.999999, 'one input: the vector ember embed gives');
  check(one.usage.prompt_tokens > 0 && one.usage.total_tokens === one.usage.prompt_tokens, 'one input: usage');

  // An array of strings, as floats.
  const many = await client.embeddings.create({ model: path.basename(model), input: texts, encoding_format: 'float' });
  check(many.data.length === 3, 'three inputs: three vectors');
  for (let i = 0; i < 3; ++i) {
    check(many.data[i].index === i, `three inputs: index ${i}`);
    check(cosine(many.data[i].embedding, cli.data[i].embedding) > 0.999999, `three inputs: vector ${i} as ember embed's`);
  }
  check(many.usage.prompt_tokens === cli.usage.prompt_tokens,
        `three inputs: ${many.usage.prompt_tokens} tokens, ember embed counts ${cli.usage.prompt_tokens}`);
  check(cosine(many.data[0].embedding, many.data[1].embedding) < 0.9999, 'different texts give different vectors');

  // Token arrays: one array of ids, and an array of such arrays.
  const ids = [1, 403, 407, 262, 32];
  const flat = await client.embeddings.create({ model: path.basename(model), input: ids, encoding_format: 'float' });
  const nested = await client.embeddings.create({ model: path.basename(model), input: [ids, ids.slice(0, 3)],
                                                  encoding_format: 'float' });
  check(flat.data.length === 1 && nested.data.length === 2, 'token arrays: one vector per array');
  check(cosine(flat.data[0].embedding, nested.data[0].embedding) > 0.999999, 'token arrays: the same ids, the same vector');
  check(flat.usage.prompt_tokens === 5 && nested.usage.prompt_tokens === 8, 'token arrays: usage counts the ids');

  // Refusals, each naming its field.
  const refusals = [
    [{ input: 'a', dimensions: 8 }, 400, 'dimensions'],
    [{ input: 5.5 }, 400, 'input'],
    [{ input: ['a', 3] }, 400, 'input'],
    [{ input: [[1, 2], 'b'] }, 400, 'input'],
    [{ input: [[[1]]] }, 400, 'input'],
    [{ input: [] }, 400, 'input'],
    [{ input: [[]] }, 400, 'input'],
    [{}, 400, 'input'],
    [{ input: [1, 1000000] }, 400, 'input'],
    [{ input: [1, -3] }, 400, 'input'],
    [{ input: 'word '.repeat(64) }, 400, 'input'],
    [{ input: 'a', encoding_format: 'hex' }, 400, 'encoding_format'],
    [{ input: 'a', model: 'another-model' }, 404, 'model'],
    ['[1, 2]', 400, null],
    ['{"input": "a"', 400, null],
  ];
  for (const [body, status, param] of refusals) {
    const r = await post(server.port, body);
    const what = `refusal ${typeof body === 'string' ? body : JSON.stringify(body)}`;
    check(r.status === status, `${what}: status ${r.status}, expected ${status} (${r.body})`);
    let err = {};
    try { err = JSON.parse(r.body).error || {}; } catch { check(false, `${what}: the body is not JSON`); }
    check(typeof err.message === 'string' && err.message.length > 0, `${what}: a message`);
    if (param) check(err.param === param, `${what}: param ${err.param}, expected ${param}`);
  }
  // Other fields (user) are read past.
  const withUser = await post(server.port, { input: 'a', user: 'someone', extra: { nested: [1, { x: 2 }] } });
  check(withUser.status === 200, `unknown fields are read past: ${withUser.status} ${withUser.body.slice(0, 200)}`);
  // The server still generates beside it.
  const completion = await client.completions.create({ model: path.basename(model), prompt: 'Once', max_tokens: 4 });
  check(completion.choices.length === 1, 'completions still answer beside embeddings');
} finally {
  server.proc.kill('SIGTERM');
}

// Without --embeddings: 501.
const plain = await startServer([]);
try {
  const r = await post(plain.port, { input: 'a' });
  check(r.status === 501 && r.body.includes('--embeddings'), `without --embeddings: ${r.status} ${r.body}`);
} finally {
  plain.proc.kill('SIGTERM');
}

console.log(`${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
