#!/usr/bin/env python3
"""Smoke tests of one nginx build, for tests/clients/nginx.sh.

    nginx-smoke.py check --nginx BIN --dir DIR --method kqueue|epoll
    nginx-smoke.py bench --nginx kq=BIN --nginx epoll=BIN --dir DIR [--runs N]

`check` starts BIN on 127.0.0.1 (free ports, prefix DIR, `daemon off`, its
own process group, stopped at the end) with the upstreams it needs, written
here: a TCP echo server, a TCP server that resets its connections, a slow
HTTP server, a UDP echo server that answers in bursts, a DNS responder that
answers A queries in bursts, and a bound port that refuses connections.
Each check prints one line

    CHECK<TAB>name<TAB>PASS|FAIL<TAB>detail

`bench` starts every BIN (one worker each) on a 4 KiB static file and
measures requests per second with ab (apache2-utils; each run --seconds or
its number of requests, whichever ends first), the builds taken in turn,
and prints one line per mode:

    BENCH<TAB>mode<TAB>concurrency<TAB>requests per run<TAB>label=rps,rps,...<TAB>...

Everything here is bounded by timeouts; the exit status is 0 when every
check passed.
"""

import argparse
import hashlib
import http.client
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"


def free_port(kind=socket.SOCK_STREAM):
    """A port the kernel had free a moment ago (nginx binds it next)."""
    s = socket.socket(socket.AF_INET, kind)
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_ports(n):
    """n distinct ports free for TCP and UDP alike."""
    ports = set()
    while len(ports) < n:
        p = free_port()
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind((HOST, p))
        except OSError:
            continue
        finally:
            u.close()
        ports.add(p)
    return list(ports)


# --- upstreams written for the tests ---------------------------------------

class Server(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()


class TcpEcho(Server):
    """Echoes every byte back; counts connections."""

    def __init__(self):
        super().__init__()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0

    def serve(self, c):
        c.settimeout(10)
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                c.sendall(b)
        except OSError:
            pass
        finally:
            c.close()

    def run(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            self.connections += 1
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()
        self.sock.close()


class TcpReset(Server):
    """Reads what comes, then resets the connection (SO_LINGER 0)."""

    def __init__(self):
        super().__init__()
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.resets = 0

    def run(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            c.settimeout(5)
            try:
                c.recv(65536)
            except OSError:
                pass
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            c.close()
            self.resets += 1
        self.sock.close()


class SlowHttp(Server):
    """An HTTP upstream that answers after `delay` seconds, unless its
    client (nginx) closes first; records how long each connection lived
    and whether it was closed by the other side."""

    def __init__(self, delay=4.0):
        super().__init__()
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.delay = delay
        self.closed_early = []      # seconds from request to nginx's close

    def serve(self, c):
        c.settimeout(5)
        try:
            req = b""
            while b"\r\n\r\n" not in req:
                b = c.recv(4096)
                if not b:
                    return
                req += b
            t0 = time.monotonic()
            c.settimeout(0.05)
            while time.monotonic() - t0 < self.delay:
                try:
                    if not c.recv(4096):
                        self.closed_early.append(time.monotonic() - t0)
                        return
                except socket.timeout:
                    continue
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n"
                      b"Connection: close\r\n\r\nslow")
        except OSError:
            self.closed_early.append(-1)
        finally:
            c.close()

    def run(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()
        self.sock.close()


class UdpBurstEcho(Server):
    """Collects datagrams until none came for `quiet` seconds (or `want`
    arrived), then echoes all of them back to their senders in one burst,
    so that several datagrams are queued at once on nginx's socket."""

    def __init__(self, want, quiet=0.3):
        super().__init__()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((HOST, 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.want, self.quiet = want, quiet
        self.received = 0
        self.bursts = []

    def run(self):
        pending, last = [], 0.0
        while not self.stop.is_set():
            try:
                data, peer = self.sock.recvfrom(65536)
                pending.append((data, peer))
                self.received += 1
                last = time.monotonic()
            except socket.timeout:
                pass
            except OSError:
                break
            if pending and (len(pending) >= self.want or
                            time.monotonic() - last >= self.quiet):
                for data, peer in pending:
                    self.sock.sendto(data, peer)
                self.bursts.append(len(pending))
                pending = []
        self.sock.close()


class Dns(Server):
    """A DNS responder for the names *.kq.test: A -> 127.0.0.1, any other
    type -> no answer (NOERROR), other names -> NXDOMAIN.  Queries are held
    until `quiet` seconds pass without one, then answered in one burst."""

    def __init__(self, quiet=0.2):
        super().__init__()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((HOST, 0))
        self.sock.settimeout(0.02)
        self.port = self.sock.getsockname()[1]
        self.quiet = quiet
        self.names = {}
        self.bursts = []          # (peer, datagrams) per burst and socket
        self.lock = threading.Lock()

    @staticmethod
    def answer(q):
        if len(q) < 12:
            return None
        qid, flags, qd = struct.unpack("!HHH", q[:6])
        if qd != 1 or flags & 0x8000:
            return None
        i, labels = 12, []
        while i < len(q) and q[i]:
            n = q[i]
            labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        if i + 5 > len(q):
            return None
        qtype, qclass = struct.unpack("!HH", q[i + 1:i + 5])
        question = q[12:i + 5]
        name = ".".join(labels).lower()
        rcode, answers = 0, b""
        if not name.endswith(".kq.test"):
            rcode = 3
        elif qtype == 1 and qclass == 1:
            answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + \
                socket.inet_aton(HOST)
        hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1,
                          1 if answers else 0, 0, 0)
        return name, qtype, hdr + question + answers

    def run(self):
        pending, last = [], 0.0
        while not self.stop.is_set():
            try:
                q, peer = self.sock.recvfrom(4096)
                a = self.answer(q)
                if a:
                    name, qtype, reply = a
                    with self.lock:
                        self.names.setdefault(name, set()).add(qtype)
                    pending.append((reply, peer))
                    last = time.monotonic()
            except socket.timeout:
                pass
            except OSError:
                break
            if pending and time.monotonic() - last >= self.quiet:
                per = {}
                for reply, peer in pending:
                    self.sock.sendto(reply, peer)
                    per[peer] = per.get(peer, 0) + 1
                self.bursts.extend(per.values())
                pending = []
        self.sock.close()


# --- nginx ------------------------------------------------------------------

class Nginx:
    def __init__(self, binary, prefix, conf):
        self.binary, self.prefix = binary, prefix
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        self.conf = os.path.join(prefix, "nginx.conf")
        self.errlog = os.path.join(prefix, "logs", "error.log")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.proc = None

    def start(self, port, timeout=15):
        out = open(os.path.join(self.prefix, "logs", "stderr.log"), "w")
        self.proc = subprocess.Popen(
            [self.binary, "-p", self.prefix + "/", "-c", self.conf,
             "-e", self.errlog],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with status %d at start: %s"
                                   % (self.proc.returncode, self.tail()))
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not listen within %d s" % timeout)

    def tail(self, n=5):
        try:
            with open(self.errlog, errors="replace") as f:
                return " | ".join(f.read().splitlines()[-n:])
        except OSError:
            return ""

    def log(self):
        try:
            with open(self.errlog, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout=10):
        """SIGQUIT (graceful); the status, or None when it had to be
        killed.  The whole process group goes in the end."""
        if not self.proc:
            return None
        rc = None
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGQUIT)
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                rc = None
            except ProcessLookupError:
                rc = self.proc.poll()
        else:
            rc = self.proc.returncode
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        return rc


def user_line():
    return "user root root;\n" if os.geteuid() == 0 else ""


# --- checks -----------------------------------------------------------------

results = []


def check(name):
    def wrap(fn):
        def run(*a):
            t0 = time.monotonic()
            try:
                ok, detail = fn(*a)
            except Exception as e:          # a check never stops the others
                ok, detail = False, "%s: %s" % (type(e).__name__, e)
            detail = "%s (%.1f s)" % (detail, time.monotonic() - t0)
            results.append((name, ok, detail))
            print("CHECK\t%s\t%s\t%s" % (name, "PASS" if ok else "FAIL",
                                         detail.replace("\t", " ")),
                  flush=True)
        return run
    return wrap


def http_get(port, path, host=None, timeout=10, conn=None):
    c = conn or http.client.HTTPConnection(HOST, port, timeout=timeout)
    hdrs = {"Host": host} if host else {}
    c.request("GET", path, headers=hdrs)
    r = c.getresponse()
    body = r.read()
    return r.status, body, r, c


def run_threads(n, fn):
    """fn(i) in n threads at once; the list of exceptions (None when ok)."""
    errs = [None] * n
    go = threading.Barrier(n)

    def body(i):
        try:
            go.wait(10)
            fn(i)
        except Exception as e:
            errs[i] = "%s: %s" % (type(e).__name__, e)

    ts = [threading.Thread(target=body, args=(i,), daemon=True)
          for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return [e if e else ("thread still running" if t.is_alive() else None)
            for e, t in zip(errs, ts)]


def main_check(a):
    prefix = os.path.abspath(a.dir)
    shutil.rmtree(prefix, ignore_errors=True)
    docroot = os.path.join(prefix, "html")
    os.makedirs(docroot)
    os.chmod(prefix, 0o755)
    rnd = random.Random(12)
    # sizes: empty, tiny, a page, odd sizes, and 6 MiB (more than the
    # loopback socket buffers: nginx must wait for WRITE events)
    sizes = {"f0": 0, "f1": 1, "f4k": 4096, "f70k": 70001,
             "f300k": 300007, "f6m": 6 * 1024 * 1024 + 3}
    files = {}
    for name, size in sizes.items():
        data = rnd.randbytes(size)
        files[name] = data
        with open(os.path.join(docroot, name), "wb") as f:
            f.write(data)

    echo, dns, rst, slow = TcpEcho(), Dns(), TcpReset(), SlowHttp()
    udp_n = 20
    uecho = UdpBurstEcho(udp_n)
    servers = (echo, dns, uecho, rst, slow)
    for s in servers:
        s.start()
    # a bound socket that does not listen: connections to it are refused
    dead = socket.socket()
    dead.bind((HOST, 0))
    dead_port = dead.getsockname()[1]
    p_static, p_back, p_proxy, p_resolv, p_tcp, p_udp, p_rst, p_timer, \
        p_timer2 = free_ports(9)

    conf = f"""{user_line()}worker_processes 2;
daemon off;
master_process on;
error_log logs/error.log info;
pid logs/nginx.pid;
events {{ worker_connections 512; }}
http {{
    access_log off;
    default_type application/octet-stream;
    keepalive_requests 1000;
    server {{
        listen {HOST}:{p_static};
        root {docroot};
        location /sf/ {{ sendfile on; alias {docroot}/; }}
    }}
    server {{
        listen {HOST}:{p_back};
        root {docroot};
        add_header X-Served-Host $host;
    }}
    upstream back {{ server {HOST}:{p_back}; keepalive 8; }}
    upstream back_refused {{
        server {HOST}:{dead_port} max_fails=0;
        server {HOST}:{p_back} max_fails=0;
    }}
    server {{
        listen {HOST}:{p_proxy};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location /p/ {{ proxy_pass http://back/; }}
        location /r/ {{ proxy_pass http://back_refused/; }}
        location /slow/ {{ proxy_pass http://{HOST}:{slow.port}; }}
    }}
    server {{
        listen {HOST}:{p_resolv};
        resolver {HOST}:{dns.port} valid=60s;
        resolver_timeout 4s;
        location / {{ proxy_pass http://$host:{p_back}; }}
    }}
}}
stream {{
    upstream tcp_refused {{
        server {HOST}:{dead_port} max_fails=0;
        server {HOST}:{echo.port} max_fails=0;
    }}
    server {{
        listen {HOST}:{p_tcp};
        proxy_pass tcp_refused;
        proxy_connect_timeout 3s;
        proxy_timeout 10s;
    }}
    server {{
        listen {HOST}:{p_rst};
        proxy_pass {HOST}:{rst.port};
        proxy_timeout 10s;
    }}
    server {{
        listen {HOST}:{p_udp} udp reuseport;
        proxy_pass {HOST}:{uecho.port};
        proxy_timeout 5s;
    }}
}}
"""
    ngx = Nginx(a.nginx, prefix, conf)
    try:
        ngx.start(p_static)
    except Exception as e:
        print("CHECK\tstart\tFAIL\t%s" % e, flush=True)
        ngx.stop()
        return 1
    print("CHECK\tstart\tPASS\tlistening on 127.0.0.1:%d" % p_static,
          flush=True)

    def refusals(where):
        """Refused upstream connections in the error log for `where`, and
        how many of them nginx took from the event (kqueue: ev->kq_errno,
        the fflags of EV_EOF)."""
        lines = [l for l in ngx.log().splitlines()
                 if "(111: Connection refused) while connecting to upstream" in l
                 and re.search(where, l)]
        return len(lines), sum("kevent() reported that connect() failed" in l
                               for l in lines)

    def kevent_note(n):
        return " (%d from kevent's fflags)" % n if a.method == "kqueue" else ""

    @check("event-method")
    def c_method():
        time.sleep(0.3)
        log = ngx.log()
        want = 'using the "%s" event method' % a.method
        used = sorted(set(re.findall(r'using the "([a-z_]+)" event method',
                                     log)))
        return want in log and used == [a.method], \
            "error log names %s" % (", ".join(used) or "no method")

    @check("static-files")
    def c_static():
        bad = []
        for name, data in files.items():
            for pre in ("/", "/sf/"):
                st, body, _, c = http_get(p_static, pre + name)
                c.close()
                if st != 200 or body != data:
                    bad.append("%s%s: %d, %d bytes" % (pre, name, st,
                                                        len(body)))
        return not bad, "%d files x {sendfile off, on}%s" % (
            len(files), "; " + "; ".join(bad) if bad else ", bytes equal")

    @check("static-keepalive")
    def c_keepalive():
        c = http.client.HTTPConnection(HOST, p_static, timeout=10)
        first, n, bad = None, 0, []
        for i in range(3):
            for name, data in files.items():
                st, body, r, _ = http_get(p_static, "/" + name, conn=c)
                n += 1
                if first is None:
                    first = c.sock
                if st != 200 or body != data:
                    bad.append(name)
        same = c.sock is first and c.sock is not None
        c.close()
        return same and not bad, "%d requests on %s connection%s" % (
            n, "one" if same else "MORE THAN ONE",
            "; bad: " + ",".join(bad) if bad else "")

    @check("static-concurrent")
    def c_concurrent():
        names = list(files)

        def client(i):
            r = random.Random(i)
            c = http.client.HTTPConnection(HOST, p_static, timeout=20)
            for _ in range(12):
                name = r.choice(names)
                st, body, _, _ = http_get(p_static, r.choice(["/", "/sf/"]) +
                                          name, conn=c)
                if st != 200 or body != files[name]:
                    raise AssertionError("%s: %d, %d bytes" %
                                         (name, st, len(body)))
            c.close()
        errs = [e for e in run_threads(16, client) if e]
        return not errs, "16 keep-alive clients x 12 requests%s" % (
            "; " + "; ".join(errs[:3]) if errs else ", bytes equal")

    @check("static-slow-reader")
    def c_slow():
        s = socket.create_connection((HOST, p_static), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.sendall(b"GET /sf/f6m HTTP/1.0\r\nHost: x\r\n\r\n")
        buf = bytearray()
        while True:
            b = s.recv(65536)
            if not b:
                break
            buf += b
            if len(buf) < 2 * 1024 * 1024:
                time.sleep(0.002)
        s.close()
        body = bytes(buf).split(b"\r\n\r\n", 1)[-1]
        ok = body == files["f6m"]
        return ok, "6 MiB read slowly through a 16 KiB receive buffer: %d bytes%s" % (
            len(body), "" if ok else " (WRONG)")

    @check("static-client-abort")
    def c_abort():
        # clients that reset the connection in the middle of a 6 MiB file:
        # nginx meets the reset on its WRITE event (EV_EOF, ECONNRESET or
        # EPIPE in fflags on kqueue) and must go on serving the others
        for i in range(12):
            s = socket.create_connection((HOST, p_static), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" %
                      (b"/sf/f6m" if i % 2 else b"/f6m"))
            got = 0
            while got < 100000:
                b = s.recv(65536)
                if not b:
                    break
                got += len(b)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            s.close()
        time.sleep(0.3)
        st, body, _, c = http_get(p_static, "/f300k")
        c.close()
        ok = st == 200 and body == files["f300k"]
        log = ngx.log()
        return ok, "12 clients reset a 6 MiB transfer after 100 kB (logged: " \
            "%d ECONNRESET, %d EPIPE); the next request %s" % (
                log.count("(104: Connection reset by peer) while sending"),
                log.count("(32: Broken pipe) while sending"),
                "served" if ok else "FAILED")

    @check("http-proxy")
    def c_proxy():
        names = list(files)

        def client(i):
            c = http.client.HTTPConnection(HOST, p_proxy, timeout=20)
            for name in names[i % 2::2] + names:
                st, body, _, _ = http_get(p_proxy, "/p/" + name, conn=c)
                if st != 200 or body != files[name]:
                    raise AssertionError("/p/%s: %d, %d bytes" %
                                         (name, st, len(body)))
            c.close()
        errs = [e for e in run_threads(8, client) if e]
        return not errs, "8 clients, every file through proxy_pass to a second server block%s" % (
            "; " + "; ".join(errs[:3]) if errs else ", bytes equal")

    @check("http-proxy-refused-upstream")
    def c_proxy_refused():
        bad = []
        for i in range(6):
            st, body, _, c = http_get(p_proxy, "/r/f70k")
            c.close()
            if st != 200 or body != files["f70k"]:
                bad.append("%d: %d" % (i, st))
        refused, by_kevent = refusals(r"request: \"GET /r/")
        return not bad and refused > 0 and \
            (a.method != "kqueue" or by_kevent == refused), \
            "6 requests, upstream 1 refuses: %s; %d refusals logged%s" % (
                "all served by upstream 2" if not bad else "; ".join(bad),
                refused, kevent_note(by_kevent))

    @check("stream-tcp-refused-upstream")
    def c_stream():
        bad, before = [], echo.connections
        for i in range(6):
            s = socket.create_connection((HOST, p_tcp), timeout=8)
            msg = b"ping %d %s\n" % (i, b"x" * (i * 1000))
            s.sendall(msg)
            got = b""
            try:
                while len(got) < len(msg):
                    b = s.recv(65536)
                    if not b:
                        break
                    got += b
            except socket.timeout:
                pass
            s.close()
            if got != msg:
                bad.append("conn %d: %d of %d bytes back" % (i, len(got),
                                                             len(msg)))
        refused, by_kevent = refusals(r"server: %s:%d" % (re.escape(HOST),
                                                           p_tcp))
        reached = echo.connections - before
        return not bad and refused > 0 and reached == 6 and \
            (a.method != "kqueue" or by_kevent == refused), \
            "6 connections, upstream 1 refuses: %s; %d reached the echo server; " \
            "%d refusals logged%s" % ("all echoed" if not bad else "; ".join(bad),
                                      reached, refused, kevent_note(by_kevent))

    @check("stream-tcp-upstream-reset")
    def c_reset():
        # the upstream resets an established connection: nginx must close
        # the client's at once (ECONNRESET, from EV_EOF's fflags on kqueue)
        times, bad = [], []
        for i in range(4):
            s = socket.create_connection((HOST, p_rst),
                                         timeout=5)
            t0 = time.monotonic()
            s.sendall(b"hello %d\n" % i)
            try:
                b = s.recv(100)
                if b:
                    bad.append("conn %d: got data" % i)
            except ConnectionResetError:
                pass
            except socket.timeout:
                bad.append("conn %d: still open after 5 s" % i)
            times.append(time.monotonic() - t0)
            s.close()
        time.sleep(0.2)
        lines = [l for l in ngx.log().splitlines()
                 if "(104: Connection reset by peer)" in l and
                 "server: %s:%d" % (HOST, p_rst) in l]
        by_kevent = sum("kevent() reported" in l for l in lines)
        ok = not bad and len(lines) >= 4 and \
            (a.method != "kqueue" or by_kevent == len(lines))
        return ok, "4 connections reset by the upstream: %s in %.2f s at " \
            "most; %d resets logged%s" % (
                "all closed" if not bad else "; ".join(bad), max(times),
                len(lines), kevent_note(by_kevent))

    @check("http-proxy-client-abort")
    def c_client_abort():
        # the client goes away while nginx waits for a slow upstream: nginx
        # must notice (kqueue: EV_EOF on the client's READ) and close the
        # upstream connection long before the upstream answers (4 s)
        before = len(slow.closed_early)
        for i in range(3):
            s = socket.create_connection((HOST, p_proxy), timeout=5)
            s.sendall(b"GET /slow/%d HTTP/1.1\r\nHost: x\r\n\r\n" % i)
            time.sleep(0.3)
            s.close()
        deadline = time.monotonic() + 3
        while len(slow.closed_early) - before < 3 and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        early = slow.closed_early[before:]
        ok = len(early) == 3 and all(0 <= t < 2 for t in early)
        return ok, "3 clients gone while the upstream waits 4 s: upstream " \
            "connections closed by nginx after %s s" % (
                ", ".join("%.2f" % t for t in early) or "none")

    @check("stream-udp-burst")
    def c_udp():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.5)
        s.connect((HOST, p_udp))
        sent = set()
        for i in range(udp_n):
            d = b"%03d:" % i + bytes([65 + i]) * (10 + 37 * i)
            sent.add(d)
            s.send(d)
        got, deadline = set(), time.monotonic() + 6
        while len(got) < udp_n and time.monotonic() < deadline:
            try:
                got.add(s.recv(65536))
            except socket.timeout:
                pass
        s.close()
        ok = got == sent
        return ok, "%d datagrams sent in a burst, %d reached the echo server, " \
            "%d replies back (echo bursts %s)" % (udp_n, uecho.received,
                                                  len(got & sent),
                                                  uecho.bursts[-4:])

    @check("resolver")
    def c_resolver():
        n = 8
        names = ["n%d.kq.test" % i for i in range(n)]
        res = [None] * n

        def client(i):
            st, body, r, c = http_get(p_resolv, "/f4k", host=names[i],
                                      timeout=15)
            c.close()
            res[i] = (st, r.getheader("X-Served-Host"))
            if st != 200 or body != files["f4k"] or \
                    r.getheader("X-Served-Host") != names[i]:
                raise AssertionError("%s: %d %s" % (names[i], st, res[i][1]))
        errs = [e for e in run_threads(n, client) if e]
        queried = sum(1 for x in names if 1 in dns.names.get(x, ()))
        burst = max(dns.bursts) if dns.bursts else 0
        return not errs and queried == n, \
            "%d concurrent requests, %d names resolved by the test's DNS " \
            "(largest burst of answers to one socket: %d)%s" % (
                n, queried, burst, "; " + "; ".join(errs[:3]) if errs else "")

    @check("timer-resolution")
    def c_timer():
        # a second instance with timer_resolution: nginx's clock then comes
        # from a periodic timer (kqueue: EVFILT_TIMER; epoll: setitimer),
        # and an idle stream connection must still time out (its cached
        # clock may lag, so the timeout may come early: seen at 0.23 s on
        # epoll under load)
        conf2 = f"""{user_line()}worker_processes 1;
daemon off;
master_process on;
error_log logs/error.log info;
pid logs/nginx.pid;
timer_resolution 20ms;
events {{ worker_connections 64; }}
http {{
    access_log off;
    server {{ listen {HOST}:{p_timer}; root {docroot}; }}
}}
stream {{
    server {{
        listen {HOST}:{p_timer2};
        proxy_pass {HOST}:{echo.port};
        proxy_timeout 500ms;
    }}
}}
"""
        n2 = Nginx(a.nginx, os.path.join(prefix, "timer"), conf2)
        try:
            n2.start(p_timer)
            st, body, _, c = http_get(p_timer, "/f70k")
            c.close()
            s = socket.create_connection((HOST, p_timer2), timeout=5)
            s.sendall(b"tick\n")
            echoed = s.recv(100)
            t0 = time.monotonic()
            try:
                rest = s.recv(100)
            except socket.timeout:
                rest = None
            idle = time.monotonic() - t0
            s.close()
        finally:
            rc = n2.stop()
        alerts = [l for l in n2.log().splitlines()
                  if re.search(r"\[(alert|emerg|crit)\]", l)]
        ok = st == 200 and body == files["f70k"] and echoed == b"tick\n" \
            and rest == b"" and 0.1 <= idle < 2.5 and rc == 0 and not alerts
        return ok, "timer_resolution 20ms: static file %s; idle stream " \
            "connection (proxy_timeout 500ms) closed by nginx after %.2f s%s; " \
            "exit status %s, %d alerts" % (
                "served" if st == 200 and body == files["f70k"] else "FAILED",
                idle, "" if rest == b"" else " (NOT CLOSED)", rc, len(alerts))

    for c in (c_method, c_static, c_keepalive, c_concurrent, c_slow,
              c_abort, c_proxy, c_proxy_refused, c_client_abort, c_stream,
              c_reset, c_udp, c_resolver, c_timer):
        c()

    rc = ngx.stop()
    log = ngx.log()
    bad = [l for l in log.splitlines()
           if re.search(r"\[(alert|emerg|crit)\]", l)]
    ok = rc == 0 and not bad
    print("CHECK\tclean-shutdown\t%s\t%s" % (
        "PASS" if ok else "FAIL",
        "SIGQUIT: exit status %s; %d alert/crit/emerg lines in the error log%s"
        % (rc, len(bad), (": " + bad[0][:200]) if bad else "")), flush=True)
    results.append(("clean-shutdown", ok, ""))
    for s in servers:
        s.stop.set()
    dead.close()
    return 0 if all(r[1] for r in results) else 1


# --- bench ------------------------------------------------------------------

def main_bench(a):
    top = os.path.abspath(a.dir)
    shutil.rmtree(top, ignore_errors=True)
    builds = []
    for spec in a.nginx:
        label, binary = spec.split("=", 1)
        prefix = os.path.join(top, label)
        os.makedirs(os.path.join(prefix, "html"))
        os.chmod(top, 0o755)
        os.chmod(prefix, 0o755)
        with open(os.path.join(prefix, "html", "f4k"), "wb") as f:
            f.write(random.Random(4).randbytes(4096))
        port = free_ports(1)[0]
        conf = f"""{user_line()}worker_processes 1;
daemon off;
error_log logs/error.log notice;
pid logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 100000;
    server {{ listen {HOST}:{port} backlog=1024; root {prefix}/html; }}
}}
"""
        builds.append((label, Nginx(binary, prefix, conf), port))
    try:
        for label, ngx, port in builds:
            ngx.start(port)
        for label, ngx, port in builds:     # warm-up, not counted
            subprocess.run(["ab", "-q", "-k", "-c", str(a.concurrency), "-n",
                            "5000", "http://%s:%d/f4k" % (HOST, port)],
                           capture_output=True, timeout=60)
        # each run: a.seconds or n requests, whichever comes first
        modes = [("keepalive", ["-k"], 10 * a.requests),
                 ("connection-per-request", [], a.requests)]
        rps = {(m, l): [] for m, _, _ in modes for l, _, _ in builds}
        total = {k: 0 for k in rps}
        for m, flags, n in modes:
            for r in range(a.runs):
                order = builds if r % 2 == 0 else builds[::-1]
                for label, ngx, port in order:
                    out = subprocess.run(
                        ["ab", "-q", "-r", "-c", str(a.concurrency),
                         "-t", str(a.seconds), "-n", str(n)] + flags +
                        ["http://%s:%d/f4k" % (HOST, port)],
                        capture_output=True, text=True, timeout=120).stdout
                    v = re.search(r"Requests per second:\s+([0-9.]+)", out)
                    done = re.search(r"Complete requests:\s+([0-9]+)", out)
                    done = int(done.group(1)) if done else 0
                    total[(m, label)] += done
                    failed = re.search(r"Failed requests:\s+([0-9]+)", out)
                    if not v or (failed and int(failed.group(1))):
                        print("bench: ab failed on %s:\n%s" % (label, out),
                              file=sys.stderr)
                        return 1
                    rps[(m, label)].append(float(v.group(1)))
            print("BENCH\t%s\t%d\t%d\t%s" % (
                m, a.concurrency, max(total[(m, l)] // a.runs
                                      for l, _, _ in builds), "\t".join(
                    "%s=%s" % (l, ",".join("%.0f" % x for x in rps[(m, l)]))
                    for l, _, _ in builds)), flush=True)
    finally:
        for label, ngx, port in builds:
            ngx.stop()
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["check", "bench"])
    p.add_argument("--nginx", action="append", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--method", default="kqueue")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--seconds", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=32)
    a = p.parse_args()
    if a.what == "check":
        a.nginx = a.nginx[0]
        return main_check(a)
    return main_bench(a)


if __name__ == "__main__":
    sys.exit(main())
