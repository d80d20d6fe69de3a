#!/usr/bin/env python3
"""tools/ka_migrate_0_2.py: 0.1 calls come out in the 0.2 order, and a second
run (or a file already on 0.2) changes nothing and says so."""
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools', 'ka_migrate_0_2.py')

OLD = """void f(void) {
    ka_buffer_write(q, x, 0, n * 4, hx, NULL);
    ka_buffer_read(q, y, 8, n * 4, hy, &ev);
    ka_buffer_copy(q, a, 4, b, 16, 64, NULL);
    ka_buffer_fill(q, b, &pat, 4, 0, 64, NULL);
    ka_reduce(q, plan, in, n, KA_REDUCE_SUM, out, 8, NULL);
    ka_scan(q, plan, in, out, n, 1, NULL);
    ka_sort(q, plan, keys, (ka_buffer){0}, n, NULL);
    ka_graph_set_arg(g, 3, 0, arg);
}
"""

NEW = """void f(void) {
    ka_buffer_write(q, x, 0, hx, n * 4);
    ka_buffer_read_async(q, hy, y, 8, n * 4, &ev);
    ka_buffer_copy(q, b, 16, a, 4, 64, NULL);
    ka_buffer_fill(q, b, 0, &pat, 4, 64, NULL);
    ka_reduce(q, plan, out, 8, in, 0, n, KA_REDUCE_SUM, NULL);
    ka_scan(q, plan, out, 0, in, 0, n, 1, NULL);
    ka_sort(q, plan, keys, 0, (ka_buffer){0}, 0, n, NULL);
    ka_graph_set_arg(g, (ka_graph_node){3}, 0, arg);
}
"""


def run(path):
    return subprocess.run([sys.executable, TOOL, path], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'old.c')
        with open(path, 'w') as f:
            f.write(OLD)
        r = run(path)
        got = open(path).read()
        if r.returncode != 0 or got != NEW:
            print('first run: rc %d, stderr %r, got:\n%s' % (r.returncode, r.stderr, got))
            return 1
        # Again: copy and fill have 7 arguments in both orders; nothing may move.
        r = run(path)
        again = open(path).read()
        if again != NEW or r.returncode == 0 or 'already uses the 0.2 API' not in r.stderr:
            print('second run: rc %d, stderr %r, got:\n%s' % (r.returncode, r.stderr, again))
            return 1
    print('ka_migrate_0_2: 0.1 calls rewritten; a migrated file left alone')
    return 0


if __name__ == '__main__':
    sys.exit(main())
