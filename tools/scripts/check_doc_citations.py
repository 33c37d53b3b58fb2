#!/usr/bin/env python3
# Every citation of a docs/decisions.md or ARCHITECTURE.md section by its
# quoted title, in the tree (code comments, docs), must name (a prefix of) an existing section title:
# code cites decisions by title, so a renamed section must take its citations
# along. usage: check_doc_citations.py [ROOT]; exit 1 on a broken one.
import re, subprocess, sys, os
root = sys.argv[1] if len(sys.argv) > 1 else '.'
def titles(path, level):
    pat = re.compile(r'^' + '#' * level + r' (.+)$')
    return [m.group(1).strip() for l in open(os.path.join(root, path)) for m in [pat.match(l)] if m]
dec = titles('docs/decisions.md', 2)
arch = titles('ARCHITECTURE.md', 2)
files = subprocess.run(['git', '-C', root, 'ls-files', '-co', '--exclude-standard'], capture_output=True, text=True).stdout.split()
bad = 0; n = 0
for f in files:
    if f.startswith('docs/diary/'): continue  # history: titles as they were
    p = os.path.join(root, f)
    try: s = open(p, encoding='utf-8').read()
    except Exception: continue
    for m in re.finditer(r'(decisions\.md|ARCHITECTURE\.md)[`,]?\s*[(]?\s*\\?"((?:[^"\\]|\\.)+?)\\?"', s):
        doc, t = m.group(1), re.sub(r'\s+', ' ', re.sub(r'\n\s*(//|#|\*)', ' ', m.group(2))).replace('\\', '')
        n += 1
        pool = dec if doc == 'decisions.md' else arch
        if not any(x.startswith(t) for x in pool):
            line = s.count('\n', 0, m.start()) + 1
            print(f'{f}:{line}: {doc} "{t}" names no section'); bad += 1
print(f'{n} citations, {bad} broken')
sys.exit(1 if bad else 0)
