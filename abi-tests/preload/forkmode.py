#!/usr/bin/env python3
"""forkmode.py — a forking echo server and its client, for a socket
preload's fork mode (RDMAV_FORK_SAFE=1): every stream socket starts as TCP
and becomes an rsocket at its first data call after connect or accept, in
the child the server forked for the connection. Run in the guest under
LD_PRELOAD (both sides in this one process tree), on rxe0's address:

  forkmode.py ADDR

Six connections to one server (it accepts, forks a child per connection
and the parent closes its copy), on its one port, first
  4 at once  four client processes connect and echo 1 MiB each at the same
         time (the server's children move one after the other, under the
         semaphore /rsocket_fork, each with an rsocket listener on the
         server's port);
then, one after the other:
  epoll  the client registers its connected socket in an epoll instance
         before its first data call (the registration must follow the
         socket to its rsocket), sends 8 MiB in pieces of 64 KiB and waits
         with epoll for each echo; the child echoes with recv/sendall;
  poll   the child waits with poll() for the client's data before its
         first read, and the client writes first (with upstream's preload
         the two would wait for each other: the client for the server's
         "ready", the server for data).
Each echo is compared byte for byte; the TCP connection the socket started
as must be gone from the kernel (shut down) once the data flowed; every
server child must exit 0. The caller proves separately that the bytes went
over RDMA (TCP segment and rxe0 packet counters). Ends with
"N passed, M failed".
"""
import os
import select
import socket
import sys

ADDR = sys.argv[1] if len(sys.argv) > 1 else "192.0.2.1"
CHUNK = 65536
TOTAL = 8 << 20
PARALLEL = 4
PAR_TOTAL = 1 << 20
passed = failed = 0


def check(what, cond):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL {what}", flush=True)


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            break
        buf += b
    return bytes(buf)


def tcp_state(port):
    """The kernel's TCP state (hex, as /proc/net/tcp shows it) of the
    connection whose local port is `port`, or None."""
    states = []
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            w = line.split()
            if int(w[1].split(":")[1], 16) == port:
                states.append(w[3])
    return states


def child(conn, mode):
    """The server's child: echo until the client closes."""
    try:
        if mode == "poll":
            p = select.poll()
            p.register(conn.fileno(), select.POLLIN)
            if not p.poll(60000):
                os._exit(3)
        while True:
            b = conn.recv(CHUNK)
            if not b:
                break
            conn.sendall(b)
        conn.close()
        os._exit(0)
    except Exception as e:  # noqa: BLE001 - the child reports and exits
        print(f"server child ({mode}): {e!r}", flush=True)
        os._exit(2)


def echo_client(port, mode, data):
    """One connection: send `data` in pieces, each echoed before the next.
    Returns (began as an established TCP connection, echo intact, that TCP
    connection no longer established)."""
    c = socket.create_connection((ADDR, port), timeout=30)
    c.settimeout(None)
    tcp_port = c.getsockname()[1]
    began = "01" in tcp_state(tcp_port)
    got = bytearray()
    ep = None
    if mode == "epoll":
        # Registered while still TCP: the registration must follow.
        ep = select.epoll()
        ep.register(c.fileno(), select.EPOLLIN)
    for off in range(0, len(data), CHUNK):
        c.sendall(data[off:off + CHUNK])
        if ep is None:
            piece = recv_exact(c, CHUNK)
        else:
            piece = bytearray()
            while len(piece) < CHUNK and ep.poll(30):
                b = c.recv(CHUNK - len(piece))
                if not b:
                    break
                piece += b
        got += piece
        if len(piece) < CHUNK:
            break
    if ep is not None:
        ep.close()
    gone = "01" not in tcp_state(tcp_port)
    c.close()
    return began, bytes(got) == data, gone


def main():
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((ADDR, 0))
    lst.listen(8)
    port = lst.getsockname()[1]
    pid = os.fork()
    if pid == 0:
        # The server: a child per connection, six connections.
        kids = []
        for mode in ["echo"] * PARALLEL + ["epoll", "poll"]:
            conn, _ = lst.accept()
            k = os.fork()
            if k == 0:
                lst.close()
                child(conn, mode)
            conn.close()
            kids.append(k)
        rc = 0
        for k in kids:
            _, st = os.waitpid(k, 0)
            if not os.WIFEXITED(st) or os.WEXITSTATUS(st) != 0:
                rc = 1
        os._exit(rc)
    lst.close()

    data = os.urandom(TOTAL)
    # Four at once, each in its own process.
    par = data[:PAR_TOTAL]
    kids = []
    for i in range(PARALLEL):
        k = os.fork()
        if k == 0:
            try:
                res = echo_client(port, "echo", par)
                os._exit(sum(0 if r else 1 << b for b, r in enumerate(res)))
            except Exception as e:  # noqa: BLE001 - the child reports and exits
                print(f"client {i}: {e!r}", flush=True)
                os._exit(8)
        kids.append(k)
    for i, k in enumerate(kids):
        _, st = os.waitpid(k, 0)
        bits = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 255
        check(f"at once {i}: connected over TCP first", not bits & 1)
        check(f"at once {i}: {len(par)} bytes echoed intact", not bits & 2)
        check(f"at once {i}: the TCP connection it started as is no longer established", not bits & 4)

    # Then one after the other from this process (which used no RDMA
    # before it forked the clients above: a child cannot use what its
    # parent's librdmacm opened).
    for mode in ("epoll", "poll"):
        ok_tcp, ok_data, ok_gone = echo_client(port, mode, data)
        check(f"{mode}: connected over TCP first", ok_tcp)
        check(f"{mode}: {len(data)} bytes echoed intact", ok_data)
        check(f"{mode}: the TCP connection it started as is no longer established", ok_gone)
    _, st = os.waitpid(pid, 0)
    check("server: every child echoed and exited 0", os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


sys.exit(main())
