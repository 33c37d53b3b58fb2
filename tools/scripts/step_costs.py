#!/usr/bin/python3
"""Small steps against their two limits (issue 42), as a Markdown table.

For each model: the cost of one step of n rows after a prompt (n = 1, 2, 3,
5, 8, 16; `ember bench --lookup --draft-max 15 --json`, best of -r), against
the larger of its two limits: one decode step (the weight read: the one-row
step) and n x the per-token time of a 512-token prefill (the int8 units;
`ember bench -p 512 -n 1 --json`). A ratio of 1.25 or less meets the issue.

usage: tools/scripts/step_costs.py MODEL [MODEL...] [--threads 2] [-r 5] [--ember build/ember]
"""
import argparse
import json
import os
import subprocess
import sys

ROWS = [2, 3, 5, 8, 16]


def ember_json(ember, args):
    out = subprocess.run([ember] + args + ["--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-r", type=int, default=5, help="repetitions (best of)")
    ap.add_argument("--ember", default=os.path.join(root, "build", "ember"))
    a = ap.parse_args()
    print("| model | prefill 512: ms/token | decode step ms | " +
          " | ".join(f"n={n}: ms (limit, x)" for n in ROWS) + " |")
    print("|---|---:|---:|" + "---:|" * len(ROWS))
    for m in a.models:
        pre = ember_json(a.ember, ["bench", "-m", m, "-p", "512", "-n", "1", "-r", str(max(1, a.r // 2)),
                                   "--threads", str(a.threads)])
        tps = pre["runs"][0]["metrics"]["prefill_tokens_per_second"]
        per_token = 1000.0 / tps
        steps = ember_json(a.ember, ["bench", "--lookup", "-m", m, "--draft-max", "15", "-n", "4", "-r", str(a.r),
                                     "--threads", str(a.threads)])
        ms = steps["metrics"]["step_ms_by_rows"]
        one = ms[0]
        cells = []
        for n in ROWS:
            limit = max(one, n * per_token)
            cells.append(f"{ms[n - 1]:.1f} ({limit:.1f}, {ms[n - 1] / limit:.2f})")
        print(f"| {os.path.basename(m)} | {per_token:.2f} | {one:.1f} | " + " | ".join(cells) + " |", flush=True)
        print(f"{os.path.basename(m)}: step ms by rows 1..16: " + " ".join(f"{x:.1f}" for x in ms), file=sys.stderr)


if __name__ == "__main__":
    main()
