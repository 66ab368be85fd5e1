#!/usr/bin/env python3
"""Write the hand-made seed inputs of tests/fuzz/fuzz-port.c into
tests/fuzz/corpus-port/ (committed; rerun after changing the encoding).

The encoding (see fuzz-port.c): an op byte (% 18), a byte whose value
picks the port (% 3) and, for some ops, more; then the op's operands.
Descriptor slots: 0/1 pipe A read/write, 2/3 pipe B, 4 a socket, 5 a file."""
import os, sys

IN, OUT, INOUT, PRI, NORM, NONE, INPRIOUT, RDHUP = range(8)

def assoc(port, slot, mask, user=1): return [0, port, slot | (mask << 3), user]
def dissoc(port, slot): return [1, port, slot]
def write(pipe, n=1, oob=0): return [2, (pipe << 2) | (n - 1 if pipe < 2 else oob)]
def read(pipe): return [3, pipe << 2]
def close(slot, reopen=0, hup=0): return [4, (slot << 2) | reopen | (hup << 1)]
def send(port, ev, user): return [5, port, ev, user]
def sendn(mix, ev): return [6, mix, ev]
def alert(port, flags, ev, user): return [7, port | (flags << 2), ev, user]
def getn(port, maxm1, nget): return [8, port, (nget << 4) | maxm1]
def get(port): return [9, port]
def count(port): return [10, port]
def bad(kind, port=0): return [11, kind | (port << 3) if kind != 5 else kind | (port << 3)]
def recreate(port): return [12, port]
def drain(port): return [13, port]
def pollport(port): return [14, port]
def biggetn(port, nget): return [15, (nget - 1) | (port << 3)]
def fassoc(port, kind, now=1, user=3): return [16, port | (kind << 2) | (0x40 if now else 0), user]
def fchange(port, what, arg=0): return [17, port | (what << 2) | arg]   # 0 write 1 chmod 2 truncate 3 dissociate

seeds = {
    "fd-once": assoc(0, 0, IN, 9) + write(0) + getn(0, 3, 1) + get(0) + dissoc(0, 0),
    "fd-reassoc": assoc(0, 4, IN, 1) + assoc(0, 4, OUT, 2) + get(0) + assoc(1, 1, OUT) + get(1),
    "fd-close": assoc(0, 0, IN) + assoc(1, 0, INOUT) + close(0, 1) + write(0) + getn(0, 7, 2) + dissoc(1, 0),
    "fd-masks": sum((assoc(0, s, m, s) for s in range(6) for m in range(8)), []) + write(0, 3) + write(2, 1, 1) + close(4, 0, 1) + biggetn(0, 8),
    "user": send(0, 5, 1) + send(0, 5, 1) + send(1, 6, 2) + count(0) + getn(0, 0, 1) + getn(0, 15, 2) + sendn(0b11101, 4) + drain(1),
    "alert": send(0, 1, 1) + alert(0, 1, 3, 4) + get(0) + getn(0, 3, 3) + alert(0, 2, 1, 1) + alert(0, 3, 1, 1) + alert(0, 1, 0, 0) + getn(0, 3, 1) + pollport(0),
    "alert-update": alert(1, 2, 2, 2) + alert(1, 2, 1, 1) + get(1) + alert(1, 1, 0, 0) + alert(1, 0, 1, 1),
    "bad-args": sum((bad(k, p) for k in range(8) for p in range(3)), []) + bad(5, 4),
    "ports-churn": assoc(0, 1, OUT) + send(0, 1, 1) + recreate(0) + get(0) + assoc(0, 1, OUT) + pollport(0) + get(0),
"file": fassoc(0, 0, 1) + getn(0, 3, 1) + fchange(0, 0) + get(0) + fassoc(1, 1, 1) + fchange(1, 1) + get(1) + fassoc(2, 3, 1) + fchange(2, 2) + drain(2) + fassoc(0, 2, 0) + get(0) + fassoc(0, 0, 1) + fchange(0, 3) + fchange(0, 3),
    "pipe-hup": assoc(2, 0, IN) + close(1) + get(2) + assoc(2, 3, OUT) + close(2) + getn(2, 1, 1),
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-port")
os.makedirs(out, exist_ok=True)
for name, ops in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes(b & 0xff for b in ops))
print(f"{len(seeds)} seeds in {out}", file=sys.stderr)
