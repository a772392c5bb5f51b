#!/usr/bin/env python3
"""plainclient.py — a plain TCP client (no preload) for the fallbacks of a
socket preload's fork mode: it sends a file to a server and reports what
the server sent back.

  plainclient.py ADDR PORT FILE [DELAY]

Connects, waits DELAY seconds (default 0), sends FILE whole, shuts its
sending side down and then reads until the server closes (at most 30 s).
Prints "back N HEX" (N bytes the server sent, the first 16 of them in
hex, "-" for none) and exits 0; exits 1 on an error.

A fork-mode server (RDMAV_FORK_SAFE=1) that makes its first data call
before this client's data arrives sends "ready" (4 zero bytes) into the
stream: the exchange of rsocket(7) has the server speak first, so a peer
without the preload gets those bytes. A client that closed with them
unread would make its kernel reset the connection and drop what it had
not sent yet; this one reads them, so the server's copy must be whole.
"""
import socket
import sys
import time


def main():
    addr, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    delay = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    with open(path, "rb") as f:
        data = f.read()
    s = socket.create_connection((addr, port), timeout=30)
    if delay > 0:
        time.sleep(delay)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    back = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        back += b
    s.close()
    print("back %d %s" % (len(back), back[:16].hex() or "-"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        print("plainclient: %s" % e, file=sys.stderr)
        sys.exit(1)
