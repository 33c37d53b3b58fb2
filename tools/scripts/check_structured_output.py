#!/usr/bin/env python3
"""Sampled structured output, validated by a standard validator (issue 41).

For every schema of the corpus (tests/grammar/schemas) ember honours, and for
each model given, `ember run --json-schema` samples at temperature 1 with a
few seeds; every output that finishes (fewer tokens than the limit) must
parse as JSON and validate under the schema with python jsonschema (its
format checker on), and every run the token limit stopped must be a prefix
of a JSON document. Schemas ember refuses must be refused by name
(EMBER_ERR_UNSUPPORTED). Prints a summary; exits 1 on any failure.

usage: check_structured_output.py [--every N] [--seeds K] EMBER SCHEMA_DIR MODEL [MODEL...]
(--every N: every Nth schema only; --seeds K: the first K seeds — the
sanitizer builds run a sample, the optimized build the whole corpus)
(a MODEL of "synth:tiny" is made with `ember synth --shape tiny`: the llama2
vocabulary of 32,000 pieces, random weights)
"""
import glob, json, os, subprocess, sys, tempfile

import jsonschema

SEEDS = (1, 2)
LIMIT = 240  # below the tiny models' contexts (256)
PROMPT = "Data:"


class _End(Exception):
    pass


def is_json_prefix(text):
    """True when text is a prefix of some JSON document (syntax only): a
    recursive-descent reader that stops with _End where the text runs out
    and with ValueError at the first character no document could have."""
    i = 0

    def peek():
        if i >= len(text):
            raise _End
        return text[i]

    def ws():
        nonlocal i
        while i < len(text) and text[i] in " \t\n\r":
            i += 1

    def lit(word):
        nonlocal i
        for ch in word:
            if peek() != ch:
                raise ValueError(f"expected {word!r} at {i}")
            i += 1

    def string():
        nonlocal i
        lit('"')
        while True:
            c = peek()
            i += 1
            if c == '"':
                return
            if c == "\\":
                e = peek()
                i += 1
                if e == "u":
                    for _ in range(4):
                        if peek() not in "0123456789abcdefABCDEF":
                            raise ValueError(f"bad \\u escape at {i}")
                        i += 1
                elif e not in '"\\/bfnrt':
                    raise ValueError(f"bad escape at {i}")
            elif ord(c) < 0x20:
                raise ValueError(f"control character in a string at {i}")

    def digits(at_least_one):
        nonlocal i
        n = 0
        while i < len(text) and text[i].isdigit():
            i += 1
            n += 1
        if at_least_one and n == 0:
            peek()
            raise ValueError(f"expected a digit at {i}")

    def number():
        nonlocal i
        if peek() == "-":
            i += 1
        if peek() == "0":
            i += 1
        else:
            digits(True)
        if i < len(text) and text[i] == ".":
            i += 1
            digits(True)
        if i < len(text) and text[i] in "eE":
            i += 1
            if peek() in "+-":
                i += 1
            digits(True)

    def value():
        nonlocal i
        ws()
        c = peek()
        if c == "{":
            i += 1
            ws()
            if peek() == "}":
                i += 1
                return
            while True:
                ws()
                string()
                ws()
                lit(":")
                value()
                ws()
                c = peek()
                i += 1
                if c == "}":
                    return
                if c != ",":
                    raise ValueError(f"expected ',' or '}}' at {i - 1}")
        elif c == "[":
            i += 1
            ws()
            if peek() == "]":
                i += 1
                return
            while True:
                value()
                ws()
                c = peek()
                i += 1
                if c == "]":
                    return
                if c != ",":
                    raise ValueError(f"expected ',' or ']' at {i - 1}")
        elif c == '"':
            string()
        elif c in "-0123456789":
            number()
        else:
            lit({"t": "true", "f": "false", "n": "null"}.get(c, "?"))

    try:
        value()
        ws()
        return i == len(text)
    except _End:
        return True
    except ValueError:
        return False


def run(ember, model, schema_path, seed):
    p = subprocess.run([ember, "run", "-m", model, "-p", PROMPT, "--json-schema", schema_path, "--temp", "1",
                        "--seed", str(seed), "-n", str(LIMIT), "--threads", "2"], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    global SEEDS
    args, every = sys.argv[1:], 1
    while args and args[0].startswith("--"):
        opt, val = args[0], int(args[1])
        args = args[2:]
        if opt == "--every":
            every = val
        elif opt == "--seeds":
            SEEDS = SEEDS[:val]
        else:
            print(f"unknown option {opt}", file=sys.stderr)
            return 2
    ember, schema_dir, models = args[0], args[1], args[2:]
    tmp = tempfile.TemporaryDirectory(prefix="ember-structured-")
    for i, m in enumerate(models):
        if m.startswith("synth:"):
            models[i] = os.path.join(tmp.name, m[6:] + ".ember")
            subprocess.run([ember, "synth", "--shape", m[6:], "-o", models[i]], check=True, capture_output=True)
    for ok in ('{"a": [1, 2', '[', '{"a', '"x\\u00', '-0.5e', '  {"a": tr', '{}'):
        assert is_json_prefix(ok), ok
    for bad in ('{"a" 1', '[1,]', '{"a": 01', 'nul!', '{} x', '"\\q'):
        assert not is_json_prefix(bad), bad
    failures, finished, cut, refused, honoured, attempts = [], 0, 0, 0, 0, 0
    for path in sorted(glob.glob(os.path.join(schema_dir, "*.schema.json")))[::every]:
        name = os.path.basename(path)[: -len(".schema.json")]
        schema = json.load(open(path))
        cls = jsonschema.validators.validator_for(schema)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        was_refused = False
        for model in models:
            for seed in SEEDS:
                rc, out, err = run(ember, model, path, seed)
                attempts += 1
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
                    if not is_json_prefix(text):
                        failures.append(f"{name} seed {seed} {os.path.basename(model)}: cut at {LIMIT} tokens"
                                        f" and not a JSON prefix: {text[-200:]!r}")
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
          f" ({len([f for f in failures if 'invalid' in f or 'not JSON' in f])} failed), {cut} cut at {LIMIT} tokens"
          f" (each a JSON prefix)")
    for f in failures:
        print("FAIL", f)
    if finished < attempts // 8:  # random weights write long strings; enough runs must finish
        print(f"FAIL only {finished} of {attempts} outputs finished")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
