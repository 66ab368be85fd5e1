#!/usr/bin/env python3
"""bench/cold/lines.py TRACE MAPS BINARY SYMBOL NAME -- see lines.sh.

Reads a valgrind lackey --trace-mem=yes log; a window starts at each
execution of SYMBOL's first instruction in BINARY (whose load address
comes from MAPS, the process's /proc/PID/maps).  Per window: the distinct
64-byte lines loaded or stored (data) and fetched (code), and the distinct
4 KiB pages of either.  With LINES_DUMP=1 in the environment it also
lists that request's lines (D data, C code) and the mappings (M), for a
closer look (which library function a code line is in: nm)."""
import collections
import os
import subprocess
import sys

trace, mapsf, binary, symbol, name = sys.argv[1:6]
maps = []
for line in open(mapsf):
    p = line.split()
    lo, hi = (int(x, 16) for x in p[0].split('-'))
    maps.append((lo, hi, (p[5].split('/')[-1] if len(p) > 5 else '[anon]')
                 + ' ' + p[1], int(p[2], 16), p[5] if len(p) > 5 else ''))
base = min(lo - off for lo, hi, n, off, path in maps if path.endswith(binary.split('/')[-1]))
nm = subprocess.run(['nm', binary], capture_output=True, text=True).stdout
sym = [int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1] == symbol]
if not sym:
    sys.exit('lines.py: no symbol %s in %s' % (symbol, binary))
bound = base + sym[0]


def region(addr):
    for lo, hi, n, off, path in maps:
        if lo <= addr < hi:
            return n
    return '?'


wins = []
data = code = None
pc_ = 0
for line in open(trace):
    if line[0] == '=':
        continue
    kind = line[:2].strip()
    try:
        addr = int(line[3:].split(',')[0], 16)
    except ValueError:
        continue
    if kind == 'I':
        pc_ = addr
        if addr == bound:
            data, code = {}, set()
            wins.append((data, code))
        if code is not None:
            code.add(addr >> 6)
    elif data is not None:
        data.setdefault(addr >> 6, pc_)   # line -> first instruction
wins = wins[5:-2]    # warm-up, and the last one cut by the kill
if not wins:
    sys.exit('lines.py: no complete request in the trace')
dc = collections.Counter(len(d) for d, c in wins)
cc = collections.Counter(len(c) for d, c in wins)
pc = collections.Counter(len({l >> 6 for l in d} | {l >> 6 for l in c}) for d, c in wins)
print('%s: %d requests' % (name, len(wins)))
print('  data lines (lines: requests):', ', '.join('%d: %d' % kv for kv in sorted(dc.items())))
print('  code lines (lines: requests):', ', '.join('%d: %d' % kv for kv in sorted(cc.items())))
print('  4 KiB pages, data and code (pages: requests):', ', '.join('%d: %d' % kv for kv in sorted(pc.items())))
d, c = min(wins, key=lambda w: len(w[0]))
print('  a request with the fewest data lines, data by mapping:',
      dict(collections.Counter(region(l << 6) for l in d).most_common()))
print('  its code by mapping:', dict(collections.Counter(region(l << 6) for l in c).most_common()))
print('  its 4 KiB pages by mapping:',
      dict(collections.Counter(region(p << 12) for p in {l >> 6 for l in set(d) | c}).most_common()))


def function(addr):
    """'file:symbol' of a code address, from the mapped file's symbols."""
    for lo, hi, n, off, path in maps:
        if lo <= addr < hi and path.startswith('/'):
            if path not in function.syms:
                out = subprocess.run(['nm', '-S', '--defined-only', path],
                                     capture_output=True, text=True).stdout
                function.syms[path] = sorted(
                    (int(f[0], 16), int(f[1], 16), f[3]) for f in
                    (l.split() for l in out.splitlines()) if len(f) == 4)
            base = min(l - o for l, h, nn, o, pp in maps if pp == path)
            for s0, sz, sym in function.syms[path]:
                if s0 <= addr - base < s0 + sz:
                    return path.split('/')[-1] + ':' + sym
            return path.split('/')[-1] + ':?'
    return '?'


function.syms = {}
print('  its data lines by the code that touched each first:',
      dict(collections.Counter(region(a) for a in d.values()).most_common()))
kq = collections.Counter(function(a) for a in d.values() if 'libkq' in region(a))
print('  of them, by libkq function:', dict(kq.most_common()))
if os.environ.get('LINES_DUMP'):
    for l in sorted(d):
        print('   D %x %s %s' % (l << 6, region(l << 6), function(d[l])))
    for l in sorted(c):
        print('   C %x %s' % (l << 6, region(l << 6)))
if os.environ.get('LINES_DUMP'):
    for lo, hi, n, off, path in maps:
        print('   M %x-%x %s %s' % (lo, hi, n, path))
