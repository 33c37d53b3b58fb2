#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 150 lines), signature to
closing brace, in the files or folders given (default: tools/).

    tools/scripts/long_functions.py                 # tools/, limit 150
    tools/scripts/long_functions.py --limit 100 tools/ember runtime/model
    tools/scripts/long_functions.py --all tools/    # every function, longest first
    tools/scripts/long_functions.py --exclude 'tools/serve/*' tools/

Prints "path:line: name: N lines" per function over the limit, longest
first, and exits 1 when there is one (0 when none). A lambda counts toward
the function that holds it. It reads the code with a small brace scanner,
not a compiler: comments, string and character literals (raw strings
included) and preprocessor lines are skipped, and a brace block at namespace
or class scope whose head ends in ")" (then const, noexcept, override, a
trailing return type or a constructor's initializer list) is a function.
"""
import argparse
import fnmatch
import os
import re
import signal
import sys

SOURCE_EXTENSIONS = ('.cpp', '.cc', '.cxx', '.h', '.hpp')


def strip_code(text):
    """The text with comments, literals and preprocessor lines blanked out,
    newlines kept, so that offsets still give line numbers."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == '#':
            # A preprocessor line, with its continuations.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                out.append(' ')
                i += 1
            continue
        if c == '\n':
            out.append('\n')
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                out.append(' ')
                i += 1
            continue
        if text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append(''.join('\n' if ch == '\n' else ' ' for ch in text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            close = ')' + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append(''.join('\n' if ch == '\n' else ' ' for ch in text[i:end]))
            i = end
            continue
        if c in '"\'':
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i - 1] not in 'uUL':
                out.append(' ')
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(' ' * (min(j + 1, n) - i))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return ''.join(out)


NAMESPACE_HEAD = re.compile(r'^(inline\s+)?namespace\b[\w:\s]*$|^extern\s*$')
CLASS_HEAD = re.compile(r'^(template\s*<.*>\s*)?(class|struct|union|enum(\s+class|\s+struct)?)\b[^()=]*$', re.S)
FUNCTION_TAIL = re.compile(
    r'\)\s*(const\b|noexcept\b(\s*\([^()]*\))?|override\b|final\b|mutable\b|&&?|\s|->\s*[\w:<>,*&\s]+)*$')
INIT_LIST = re.compile(r'\)\s*(noexcept\s*)?:\s*[\w:]+\s*[({]')


def function_name(head):
    """The name before the parameter list of a function head."""
    depth = 0
    for k, ch in enumerate(head):
        if ch == '<':
            depth += 1
        elif ch == '>':
            depth = max(0, depth - 1)
        elif ch == '(' and depth == 0:
            m = re.search(r'([~\w:]+(?:operator\s*\S+?)?)\s*$', head[:k])
            return m.group(1) if m else '?'
    return '?'


def functions(path):
    """(name, first line, last line) of every function defined at namespace
    or class scope in the file."""
    with open(path, encoding='utf-8', errors='replace') as f:
        code = strip_code(f.read())
    line_at = []
    line = 1
    for ch in code:
        line_at.append(line)
        if ch == '\n':
            line += 1
    found = []
    # Scopes: ('ns' | 'class' | 'func' | 'block', start offset, name).
    stack = []
    head_start = 0
    i, n = 0, len(code)
    while i < n:
        ch = code[i]
        in_body = any(s[0] == 'func' for s in stack)
        if ch == '{':
            head = code[head_start:i].strip()
            if in_body:
                kind, name = 'block', ''
            elif NAMESPACE_HEAD.match(head):
                kind, name = 'ns', ''
            elif CLASS_HEAD.match(head):
                kind, name = 'class', ''
            elif FUNCTION_TAIL.search(head) and '=' not in head.split('(')[0]:
                kind, name = 'func', function_name(head)
            elif INIT_LIST.search(head) and re.search(r'[\w>)\]]\s*$', head):
                # A brace initializer inside a constructor's initializer list
                # (x_{1}): part of the head, not a block.
                depth = 1
                j = i + 1
                while j < n and depth:
                    depth += {'{': 1, '}': -1}.get(code[j], 0)
                    j += 1
                i = j
                continue
            else:
                kind, name = 'block', ''
            first = head_start + (len(code[head_start:i]) - len(code[head_start:i].lstrip()))
            stack.append((kind, first, name))
            head_start = i + 1
        elif ch == '}':
            if stack:
                kind, first, name = stack.pop()
                if kind == 'func' and not any(s[0] == 'func' for s in stack):
                    found.append((name, line_at[first], line_at[i]))
            head_start = i + 1
        elif ch == ';' and not in_body:
            head_start = i + 1
        elif ch in ':' and not in_body and re.search(r'\b(public|private|protected)\s*$', code[head_start:i]):
            head_start = i + 1
        i += 1
    return found


def source_files(paths, exclude):
    def wanted(path):
        return not any(fnmatch.fnmatch(path, pattern) for pattern in exclude)
    for p in paths:
        if os.path.isfile(p):
            if wanted(p):
                yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                if name.endswith(SOURCE_EXTENSIONS) and wanted(path):
                    yield path


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('paths', nargs='*', default=['tools'], help='files or folders (default: tools)')
    parser.add_argument('--limit', type=int, default=150, help='longest allowed function, in lines (default 150)')
    parser.add_argument('--all', action='store_true', help='list every function, not only those over the limit')
    parser.add_argument('--exclude', action='append', default=[], metavar='GLOB',
                        help='skip files whose path (as found) matches GLOB; repeatable')
    args = parser.parse_args()
    rows = []
    for path in source_files(args.paths, args.exclude):
        for name, first, last in functions(path):
            rows.append((last - first + 1, path, first, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    over = [r for r in rows if r[0] > args.limit]
    for length, path, first, name in rows if args.all else over:
        print(f'{path}:{first}: {name}: {length} lines')
    if not args.all:
        print(f'{len(over)} function(s) over {args.limit} lines in {len(rows)}', file=sys.stderr)
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
