#!/usr/bin/env python3
"""smoke.py — ordinary descriptors through a socket preload.

Run under LD_PRELOAD=build/librspreload.so on a machine without RDMA (the
host checks of `make test`) every socket the preload intercepts falls back
to an ordinary one, and every call must behave exactly as without the
preload: TCP over 127.0.0.1 (blocking and not), epoll (under the preload a
repoll instance holding ordinary descriptors), poll, select, dup/dup2,
fcntl, sendfile, UDP. In the guest (with RDMA on 192.0.2.1) the same
checks run over rsockets when SMOKE_ADDR=192.0.2.1 is set.
Ends with "N passed, M failed".
"""
import fcntl
import os
import select
import socket
import sys
import tempfile
import threading

ADDR = os.environ.get("SMOKE_ADDR", "127.0.0.1")
passed = failed = 0


def check(what, cond):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}")


def pair():
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((ADDR, 0))
    lst.listen(4)
    port = lst.getsockname()[1]
    got = {}

    def acc():
        got["s"] = lst.accept()[0]

    t = threading.Thread(target=acc)
    t.start()
    cli = socket.create_connection((ADDR, port), timeout=20)
    t.join(20)
    cli.settimeout(None)
    return lst, got["s"], cli


def main():
    lst, srv, cli = pair()
    check("connect/accept", srv is not None)
    cli.sendall(b"hello" * 1000)
    buf = b""
    while len(buf) < 5000:
        buf += srv.recv(65536)
    check("data both ways (client to server)", buf == b"hello" * 1000)
    srv.sendall(b"x" * 100000)
    n = 0
    while n < 100000:
        n += len(cli.recv(65536))
    check("data both ways (server to client)", n == 100000)

    # epoll: sockets and a pipe mixed; level-triggered; modify; unregister
    ep = select.epoll()
    r, w = os.pipe()
    ep.register(srv.fileno(), select.EPOLLIN)
    ep.register(r, select.EPOLLIN)
    check("epoll: nothing ready", ep.poll(0) == [])
    cli.send(b"a")
    os.write(w, b"b")
    ev = dict(ep.poll(10))
    check("epoll: socket and pipe ready", ev.get(srv.fileno(), 0) & select.EPOLLIN and ev.get(r, 0) & select.EPOLLIN)
    check("epoll: level-triggered", len(ep.poll(0)) == 2)
    srv.recv(10)
    os.read(r, 10)
    check("epoll: nothing after reading", ep.poll(0) == [])
    ep.modify(srv.fileno(), select.EPOLLOUT)
    check("epoll: modify to OUT", dict(ep.poll(1)).get(srv.fileno(), 0) & select.EPOLLOUT)
    ep.unregister(srv.fileno())
    try:
        ep.unregister(srv.fileno())
        check("epoll: unregister twice fails", False)
    except OSError as e:
        check("epoll: unregister twice fails with ENOENT", e.errno == 2)
    ep.close()

    # poll and select
    p = select.poll()
    p.register(cli.fileno(), select.POLLIN)
    check("poll: nothing", p.poll(0) == [])
    srv.send(b"z")
    check("poll: readable", p.poll(5000) == [(cli.fileno(), select.POLLIN)])
    rd, wr, _ = select.select([cli], [cli], [], 5)
    check("select: readable and writable", rd == [cli] and wr == [cli])
    cli.recv(10)

    # dup / dup2 / fcntl
    d = os.dup(cli.fileno())
    os.write(d, b"via dup")
    check("dup: data through the duplicate", srv.recv(100) == b"via dup")
    os.close(d)
    fl = fcntl.fcntl(cli.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(cli.fileno(), fcntl.F_SETFL, fl | os.O_NONBLOCK)
    try:
        cli.recv(10)
        check("non-blocking recv: EAGAIN", False)
    except BlockingIOError:
        check("non-blocking recv: EAGAIN", True)
    fcntl.fcntl(cli.fileno(), fcntl.F_SETFL, fl)
    fd2 = os.open("/dev/null", os.O_RDONLY)
    os.dup2(cli.fileno(), fd2)
    os.write(fd2, b"via dup2")
    check("dup2: data through the duplicate", srv.recv(100) == b"via dup2")
    os.close(fd2)

    # sendfile
    with tempfile.TemporaryFile() as f:
        data = os.urandom(300000)
        f.write(data)
        f.flush()
        f.seek(0)
        sent = cli.sendfile(f)
        got = b""
        while len(got) < len(data):
            got += srv.recv(65536)
        check("sendfile", sent == len(data) and got == data)

    # shutdown and end of file
    cli.shutdown(socket.SHUT_WR)
    check("end of file after the peer's shutdown", srv.recv(10) == b"")
    for s in (cli, srv, lst):
        s.close()
    os.close(r)
    os.close(w)

    # UDP (an ordinary socket unless datagram rsockets exist)
    u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u1.bind((ADDR, 0))
    u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u2.settimeout(10)
    u1.settimeout(10)
    u2.sendto(b"dgram", u1.getsockname())
    msg, src = u1.recvfrom(100)
    check("UDP datagram", msg == b"dgram")
    u1.close()
    u2.close()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


sys.exit(main())
