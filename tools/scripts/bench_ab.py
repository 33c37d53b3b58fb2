#!/usr/bin/env python3
"""Interleaved A/B of two ember binaries' `ember bench`, with the process
layout randomized per run: each run starts the binary through a symlink of
random path length and with an environment variable of random length
(0..4095 bytes), because an identical binary measured 10% apart on 1.1b
Q6_K decode from two paths of different length. Usage:
tools/scripts/bench_ab.py ROUNDS BEFORE_EMBER AFTER_EMBER MODEL.ember..."""
import json, os, random, statistics, subprocess, sys, tempfile
rounds = int(sys.argv[1]); bins = {'before': sys.argv[2], 'after': sys.argv[3]}; models = sys.argv[4:]
tmp = tempfile.mkdtemp(prefix='ab')
rng = random.Random(1234)
res = {}
def run(b, m):
    link = os.path.join(tmp, 'e' * rng.randint(1, 64))
    if os.path.lexists(link): os.remove(link)
    os.symlink(os.path.abspath(bins[b]), link)
    env = dict(os.environ, EMBER_AB_PAD='x' * rng.randint(0, 4095))
    out = subprocess.run([link, 'bench', '-m', m, '-p', '64,512', '-n', '128', '-r', '1', '--threads', '2', '--json'],
                         capture_output=True, text=True, env=env)
    os.remove(link)
    for r in json.loads(out.stdout)['runs']:
        p = r['workload']['input_length']; met = r['metrics']
        res.setdefault((m, b, f'pp{p}'), []).append(met['prefill_tokens_per_second'])
        if p == 64: res.setdefault((m, b, 'tg128'), []).append(met['tokens_per_second'])
for m in models:
    for r in range(rounds):
        for b in (list(bins) if r % 2 == 0 else list(bins)[::-1]):
            run(b, m)
        print(m, r, file=sys.stderr, flush=True)
print('| model | test | before tok/s | after tok/s | after / before |')
print('|---|---|---:|---:|---:|')
for m in models:
    for t in ('pp64', 'pp512', 'tg128'):
        a = statistics.median(res[(m, 'before', t)]); b = statistics.median(res[(m, 'after', t)])
        print(f'| {os.path.basename(m)} | {t} | {a:.2f} | {b:.2f} | {b/a:.3f} |')
