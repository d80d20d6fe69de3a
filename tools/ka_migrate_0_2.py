#!/usr/bin/env python3
"""Rewrites calls of libka 0.1's transfer, primitive and graph functions in C
sources to the 0.2 argument order (docs/API.md, "Migrating from 0.1").

    tools/ka_migrate_0_2.py FILE...      rewrites the files in place

Calls are found by name and their arguments split at top-level commas, so
calls written through macros or split across lines are handled; a call whose
argument count does not match 0.1's is left alone and reported, and so is a
file that already holds a 0.2 call (a copy or fill has 7 arguments in both
versions: a second run would swap them back). Review the diff: a transfer
given a NULL event blocked in 0.1 and still does (the blocking form), one
given an event becomes its _async twin; ka_buffer_copy and ka_buffer_fill
given NULL no longer block (they only enqueue).
"""
import re
import sys


def split_args(s, start):
    """s[start] is '('. Returns (args, end) with end the index after ')'."""
    depth, args, cur, i = 0, [], [], start
    in_str = None
    while i < len(s):
        c = s[i]
        if in_str:
            cur.append(c)
            if c == '\\':
                cur.append(s[i + 1])
                i += 2
                continue
            if c == in_str:
                in_str = None
        elif c in '"\'':
            in_str = c
            cur.append(c)
        elif c in '([{':
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                args.append(''.join(cur))
                return args, i + 1
            cur.append(c)
        elif c == ',' and depth == 1:
            args.append(''.join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    return None, start


def is_null(a):
    return a.strip() in ('NULL', '0', 'nullptr', '(ka_event *)NULL', '(void *)0')


def j(args):
    # Keep each argument's own leading whitespace (line breaks), trim the first.
    out = [a if k else a.lstrip() for k, a in enumerate(args)]
    return ','.join(out)


def sp(a):
    """An argument moved to a new position gets one leading space."""
    return ' ' + a.strip()


def rewrite_call(name, a):
    n = len(a)
    if name == 'ka_buffer_write' and n == 6:
        q, dst, off, nb, src, ev = a
        if is_null(ev):
            return 'ka_buffer_write', [q, dst, off, sp(src), sp(nb)]
        return 'ka_buffer_write_async', [q, dst, off, sp(src), sp(nb), ev]
    if name == 'ka_buffer_read' and n == 6:
        q, src, off, nb, dst, ev = a
        if is_null(ev):
            return 'ka_buffer_read', [q, sp(dst), sp(src), off, nb]
        return 'ka_buffer_read_async', [q, sp(dst), sp(src), off, nb, ev]
    if name == 'ka_buffer_copy' and n == 7:
        q, src, so, dst, do, nb, ev = a
        return name, [q, sp(dst), sp(do), sp(src), sp(so), nb, ev]
    if name == 'ka_buffer_fill' and n == 7:
        q, dst, pat, psz, off, nb, ev = a
        return name, [q, dst, sp(off), sp(pat), sp(psz), nb, ev]
    if name == 'ka_reduce' and n == 8:
        q, plan, inp, cnt, op, out, ooff, ev = a
        return name, [q, plan, sp(out), sp(ooff), sp(inp), ' 0', sp(cnt), sp(op), ev]
    if name == 'ka_scan' and n == 7:
        q, plan, inp, out, cnt, excl, ev = a
        return name, [q, plan, sp(out), ' 0', sp(inp), ' 0', cnt, excl, ev]
    if name == 'ka_sort' and n == 6:
        q, plan, keys, vals, cnt, ev = a
        return name, [q, plan, keys, ' 0', vals, ' 0', cnt, ev]
    if name == 'ka_graph_set_arg' and n == 4:
        g, node, idx, arg = a
        if 'ka_graph_node' in node:
            return None
        return name, [g, ' (ka_graph_node){' + node.strip() + '}', idx, arg]
    return None


NAMES = ['ka_buffer_write', 'ka_buffer_read', 'ka_buffer_copy', 'ka_buffer_fill', 'ka_reduce', 'ka_scan', 'ka_sort',
         'ka_graph_set_arg']
CALL = re.compile(r'\b(' + '|'.join(NAMES) + r')\s*\(')
DECL = re.compile(r'^\s*(ka_queue|ka_buffer|ka_graph|ka_prims_plan|const|void|size_t|uint32_t)\b')


# Calls only 0.2 has (by name, or by their 0.2 argument count): a file holding
# one is migrated already, at least in part. ka_buffer_copy and ka_buffer_fill
# take 7 arguments in both versions, so a second run would swap them back.
NEW_NAMES = re.compile(r'\b(ka_buffer_write_async|ka_buffer_read_async|ka_graph_last_node|ka_graph_node)\b')
NEW_COUNTS = {'ka_buffer_write': 5, 'ka_buffer_read': 5, 'ka_reduce': 9, 'ka_scan': 9, 'ka_sort': 8}


def looks_migrated(text):
    if NEW_NAMES.search(text):
        return True
    for m in CALL.finditer(text):
        args, _ = split_args(text, m.end() - 1)
        if args is not None and not (args and DECL.match(args[0])) and len(args) == NEW_COUNTS.get(m.group(1)):
            return True
    return False


def migrate(text, where):
    out, pos, left = [], 0, []
    if looks_migrated(text):
        return text, ['%s: already uses the 0.2 API (in part?): left alone, migrate the rest by hand' % where]
    for m in CALL.finditer(text):
        if m.start() < pos:
            continue
        args, end = split_args(text, m.end() - 1)
        if args is None:
            continue
        if args and DECL.match(args[0]):  # a declaration, not a call
            continue
        r = rewrite_call(m.group(1), args)
        if r is None:
            if not any('ka_graph_node' in a for a in args):
                line = text.count('\n', 0, m.start()) + 1
                left.append('%s:%d: %s(...) with %d arguments left alone' % (where, line, m.group(1), len(args)))
            continue
        name, new = r
        out.append(text[pos:m.start()])
        out.append(name + '(' + j(new) + ')')
        pos = end
    out.append(text[pos:])
    return ''.join(out), left


def main(argv):
    if len(argv) < 2 or argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    status = 0
    for path in argv[1:]:
        with open(path) as f:
            text = f.read()
        new, left = migrate(text, path)
        for msg in left:
            print(msg, file=sys.stderr)
            status = 1
        if new != text:
            with open(path, 'w') as f:
                f.write(new)
            print('%s: rewritten' % path)
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
