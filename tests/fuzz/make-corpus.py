#!/usr/bin/env python3
"""Write the hand-made seed inputs of tests/fuzz/fuzz-kevent.c into
tests/fuzz/corpus-kevent/ (committed; rerun after changing the encoding).

The encoding (see fuzz-kevent.c): one op byte (% 16), then its operands.
Slots at the start: 0, 1 kqueues; 2 pipe read end; 3 pipe write end;
new descriptors take the lowest free slots."""
import os, sys

# filter indices into pick_filter()'s table
READ, WRITE, EMPTY, TIMER, USER, VNODE, PROC, PROCDESC, SIGNAL = 0, 3, 5, 6, 8, 11, 12, 13, 14
AIO, FS, LIO, SENDFILE, ZERO, BADNEG, BADPOS = 15, 16, 17, 18, 19, 20, 21
# flag indices into pick_flags()'s table
ADD, ADDCLEAR, ADDONESHOT, ADDDISPATCH, ADDDISABLE, DELETE = 0, 2, 3, 4, 5, 6
ENABLE, DISABLE, NOFLAGS, ADDDELETE, ENDIS, FORCEONESHOT, WAKEONE, KEEPUDATA = 8, 9, 10, 11, 12, 13, 14, 15
RECEIPT = 1
# data indices into pick_data()'s table
D0, D1, D2, D3, D5, D10, D50, DNEG, DMAX = 0, 1, 2, 3, 4, 5, 6, 8, 10
# ident bytes: a slot is 0..15; small numbers 128 + n; specials
def SMALL(n): return 128 + n
HUGE_INTMAX1, HUGE_M1, HUGE_40, PID, SIGURG_ID = 192, 193, 194, 196, 197

def change(ident, filt, flags, fl2=0, ff=0, data=D0):
    return [ident, filt, flags, fl2, ff, data]

def kev(kq, changes, nev=8, bad=0):
    """kevent() with changes on the kq-th kqueue; bad: 0 or 1..8 (argument errors)."""
    out = [0, 1 | (bad << 4), kq, len(changes) - 1]
    for c in changes:
        out += c
    return out + [nev]

def wait(kq, nev=16, bad=0):
    return [5, 1 | (bad << 4), kq, nev]

def nonkq(slot, nev=4):                  # kevent() on a descriptor that is no kqueue
    return [5, 0, slot, nev]

def open_(kind, arg=0): return [7, kind] + ([arg] if kind == 2 else [])   # 0 pipe 1 socketpair 2 eventfd 3 file 4,5 kqueue
def close(slot): return [8, slot]
def dup(a): return [9, 0, a, a]
def dup2(a, b): return [9, 1, a, b]
def write(slot, n=10): return [10, slot, n, 0]
def read(slot, n=10): return [12, slot, n, 0]
def close_range(a, b): return [13, a, b]
def raise_(): return [14]
def shutdown(slot, how=1): return [15, slot, how]

S = {}
S["pipe-read"] = kev(0, [change(2, READ, ADD)]) + wait(0) + write(3) + wait(0) + read(2, 5) + wait(0) + read(2, 50) + wait(0)
S["pipe-write-clear"] = kev(0, [change(3, WRITE, ADDCLEAR), change(2, READ, ADDCLEAR)]) + wait(0) + wait(0) + write(3, 200) + wait(0) + wait(0) + close(2) + wait(0)
S["socketpair-eof"] = open_(1) + kev(1, [change(4, READ, ADD), change(4, WRITE, ADD), change(4, EMPTY, ADD)]) + write(5, 100) + wait(1) + shutdown(5) + wait(1) + read(4, 200) + wait(1) + close(5) + wait(1)
S["eventfd"] = open_(2, 1) + kev(0, [change(4, READ, ADD), change(4, WRITE, ADDDISPATCH)]) + wait(0) + read(4, 8) + wait(0) + write(4) + wait(0) + kev(0, [change(4, WRITE, ENABLE)]) + wait(0)
S["file-vnode"] = open_(3) + kev(0, [change(4, READ, ADD), change(4, VNODE, ADDCLEAR, 0, 0x7f), change(4, WRITE, ADD)]) + wait(0) + write(4, 30) + wait(0) + read(4) + wait(0) + close(4) + wait(0)
S["nested-kq"] = kev(0, [change(1, READ, ADD)]) + kev(1, [change(SMALL(3), USER, ADDCLEAR)]) + wait(0) + kev(1, [change(SMALL(3), USER, NOFLAGS, 0, 4)]) + wait(0) + wait(1) + wait(0) + kev(1, [change(0, READ, ADD)]) + close(1) + wait(0)
S["timers"] = kev(0, [change(SMALL(1), TIMER, ADDONESHOT, 0, 0x08, D1), change(SMALL(2), TIMER, ADD, 0, 0x04, D1), change(SMALL(3), TIMER, ADD, 0, 0x18, D5), change(SMALL(4), TIMER, ADD, 0, 0, DNEG)], 8) + wait(0) + write(3) + wait(0) + wait(0) + kev(0, [change(SMALL(2), TIMER, DISABLE)]) + wait(0) + kev(0, [change(SMALL(2), TIMER, DELETE)]) + wait(0)
S["user-ff"] = kev(1, [change(SMALL(5), USER, ADD, 0, (0 << 0) | (0x0f << 3))]) + kev(1, [change(SMALL(5), USER, NOFLAGS, 0, 2 | 4 | (0x30 << 3))]) + wait(1) + kev(1, [change(SMALL(5), USER, NOFLAGS, 0, 1 | 4 | (0x11 << 3))]) + wait(1) + kev(1, [change(SMALL(5), USER, NOFLAGS, 0, 3 | 4 | (0x1f << 3))]) + wait(1) + kev(1, [change(SMALL(5), USER, DELETE)]) + wait(1)
S["receipt-bad"] = kev(0, [change(2, READ, ADD, RECEIPT), change(2, BADNEG, ADD, RECEIPT), change(2, AIO, ADD), change(2, LIO, ADD), change(2, SENDFILE, ADD), change(HUGE_INTMAX1, READ, ADD), change(HUGE_M1, WRITE, ADD), change(HUGE_40, USER, ADD, RECEIPT), change(3, READ, ENDIS), change(3, EMPTY, ADD), change(2, VNODE, ADD), change(2, READ, KEEPUDATA), change(3, WRITE, WAKEONE | 0, 4), change(SMALL(1), TIMER, WAKEONE), change(0, READ, ADD), change(2, ZERO, ADD, RECEIPT)], 16) + kev(0, [change(SMALL(7), USER, DELETE, RECEIPT), change(2, READ, DELETE, RECEIPT), change(2, READ, ENABLE)], 0) + wait(0)
S["bad-args"] = wait(0, 4, 1) + kev(0, [change(2, READ, ADD)], 4, 1) + wait(0, 4, 2) + kev(0, [change(2, READ, ADD)], 4, 3) + wait(0, 4, 4) + wait(0, 4, 5) + wait(0, 4, 6) + wait(0, 4, 7) + wait(0, 0, 8) + nonkq(2) + nonkq(12) + [5, 8, 12, 4] + wait(0, 0)
S["close-dup"] = kev(0, [change(2, READ, ADD), change(3, WRITE, ADD)]) + kev(1, [change(2, READ, ADD)]) + write(3) + wait(0) + dup(2) + close(2) + wait(0) + wait(1) + open_(0) + kev(0, [change(2, READ, ADD), change(5, READ, ADD)]) + write(3) + dup2(4, 2) + wait(0) + open_(1) + kev(1, [change(6, READ, ADD), change(7, WRITE, ADD)]) + close_range(6, 7) + wait(1) + wait(0)
S["oneshot-dispatch"] = write(3) + kev(0, [change(2, READ, ADDONESHOT), change(3, WRITE, ADDDISPATCH)]) + wait(0) + wait(0) + kev(0, [change(3, WRITE, ENABLE), change(2, READ, DELETE, RECEIPT)], 4) + wait(0) + kev(0, [change(2, READ, ADD), change(2, READ, FORCEONESHOT)]) + wait(0) + wait(0) + kev(0, [change(2, READ, ADDDISABLE), change(2, READ, ENABLE), change(2, READ, ADDDELETE)]) + wait(0)
S["signal-proc"] = kev(0, [change(SIGURG_ID, SIGNAL, ADD), change(PID, PROC, ADD, RECEIPT, 0xff), change(PID, PROCDESC, ADD)], 8) + [0xff, 0, 0, 0xc0] + raise_() + raise_() + wait(0) + kev(0, [change(SIGURG_ID, SIGNAL, DELETE)]) + raise_() + wait(0)
S["kqueue-churn"] = open_(4) + kev(4, [change(0, READ, ADD), change(1, READ, ADD)]) + kev(0, [change(4, READ, ADD)]) + kev(2, [change(SMALL(1), USER, ADD, 0, 4)]) + wait(0) + close(0) + wait(1) + wait(2) + dup2(2, 4) + wait(1) + close(1) + open_(4) + open_(5) + wait(0) + wait(1)

d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-kevent")
os.makedirs(d, exist_ok=True)
for name, data in S.items():
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(b & 0xff for b in data))
print(f"{len(S)} inputs in {d}", file=sys.stderr)
