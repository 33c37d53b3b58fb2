#!/usr/bin/env python3
"""Sampled structured output, validated by a standard validator (issue 41).

For every schema of the corpus (tests/grammar/schemas) ember honours, and for
each model given, `ember run --json-schema` samples at temperature 1 with a
few seeds; every output that finishes (fewer tokens than the limit) must
parse as JSON and validate under the schema with python jsonschema (its
format checker on). Schemas ember refuses must be refused by name
(EMBER_ERR_UNSUPPORTED). Prints a summary; exits 1 on any failure.

usage: check_structured_output.py EMBER SCHEMA_DIR MODEL [MODEL...]
(a MODEL of "synth:tiny" is made with `ember synth --shape tiny`: the llama2
vocabulary of 32,000 pieces, random weights)
"""
import glob, json, os, subprocess, sys, tempfile

import jsonschema

SEEDS = (1, 2)
LIMIT = 240  # below the tiny models' contexts (256)
PROMPT = "Data:"


def run(ember, model, schema_path, seed):
    p = subprocess.run([ember, "run", "-m", model, "-p", PROMPT, "--json-schema", schema_path, "--temp", "1",
                        "--seed", str(seed), "-n", str(LIMIT), "--threads", "2"], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    ember, schema_dir, models = sys.argv[1], sys.argv[2], sys.argv[3:]
    tmp = tempfile.TemporaryDirectory(prefix="ember-structured-")
    for i, m in enumerate(models):
        if m.startswith("synth:"):
            models[i] = os.path.join(tmp.name, m[6:] + ".ember")
            subprocess.run([ember, "synth", "--shape", m[6:], "-o", models[i]], check=True, capture_output=True)
    failures, finished, cut, refused, honoured = [], 0, 0, 0, 0
    for path in sorted(glob.glob(os.path.join(schema_dir, "*.schema.json"))):
        name = os.path.basename(path)[: -len(".schema.json")]
        schema = json.load(open(path))
        cls = jsonschema.validators.validator_for(schema)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        was_refused = False
        for model in models:
            for seed in SEEDS:
                rc, out, err = run(ember, model, path, seed)
                if rc != 0:
                    if "EMBER_ERR_UNSUPPORTED" in err and "schema keyword" in err:
                        was_refused = True
                        break
                    failures.append(f"{name} seed {seed} {os.path.basename(model)}: exit {rc}: {err.strip()[-300:]}")
                    continue
                if not out.startswith(PROMPT) or not out.endswith("\n"):
                    failures.append(f"{name}: unexpected output framing: {out[:80]!r}")
                    continue
                text = out[len(PROMPT):-1]
                generated = int(err.split(" tokens generated")[0].rsplit("| ", 1)[-1])
                if generated >= LIMIT or "[context full" in err:
                    cut += 1
                    continue
                finished += 1
                try:
                    instance = json.loads(text)
                except ValueError as e:
                    failures.append(f"{name} seed {seed} {os.path.basename(model)}: not JSON ({e}): {text[:200]!r}")
                    continue
                errors = [e.message for e in validator.iter_errors(instance)]
                if errors:
                    failures.append(f"{name} seed {seed} {os.path.basename(model)}: invalid: {errors[0]}: {text[:200]!r}")
            if was_refused:
                break
        refused += was_refused
        honoured += not was_refused
    print(f"schemas: {honoured} honoured, {refused} refused; outputs: {finished} finished and validated"
          f" ({len([f for f in failures if 'invalid' in f or 'not JSON' in f])} failed), {cut} cut at {LIMIT} tokens")
    for f in failures:
        print("FAIL", f)
    if finished < honoured // 2:  # random weights write long strings; enough runs must finish
        print(f"FAIL only {finished} outputs finished for {honoured} schemas")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
