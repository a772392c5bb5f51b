#!/usr/bin/env python3
"""make-seeds.py — write the seed corpora of the fuzz targets into
fuzz/seeds/TARGET/ (small, hand-made inputs that reach each target's main
paths; the fuzzer grows its own corpus from them in build/fuzz/corpus/).
Deterministic: running it again rewrites the same files."""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "seeds")
AF_INET, AF_INET6, AF_IB = 2, 10, 27


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def sin(port, ip4):
    return struct.pack("<H", AF_INET) + struct.pack(">H", port) + bytes(ip4) + bytes(8)


def sin6(port, ip6):
    return struct.pack("<H", AF_INET6) + struct.pack(">H", port) + bytes(4) + bytes(ip6) + bytes(4)


def gai():
    # sel (bit0 node, bit1 service, bit2 hints), flags u32, family pick,
    # qp_type pick, port_space pick, src (family pick, n, bytes), dst (same),
    # 72 route bytes, src len mode, dst len mode, route len mode, strings.
    def inp(sel, flags, fam, qpt, ps, src=(0, b""), dst=(0, b""), lens=(0, 0, 0), node=b"", service=b""):
        b = bytes([sel]) + struct.pack("<I", flags) + bytes([fam, qpt, ps])
        for f, raw in (src, dst):
            b += bytes([f, len(raw)]) + raw
        b += bytes(72) + bytes(lens)
        if sel & 1:
            b += node + b"\0"
        if sel & 2:
            b += service + b"\0"
        return b

    put("gai", "active-v4", inp(7, 0, 1, 1, 2, node=b"192.0.2.1", service=b"7471"))
    put("gai", "passive", inp(6, 1, 0, 0, 2, service=b"7471"))
    put("gai", "v6-ud", inp(7, 0, 2, 4, 3, node=b"fd00::1", service=b"7472"))
    put("gai", "service-name", inp(6, 1, 0, 1, 2, service=b"echo"))
    put("gai", "hints-only", inp(4, 0, 1, 1, 1, dst=(1, sin(7471, [192, 0, 2, 2])[2:]), lens=(0, 1, 0)))
    put("gai", "src-hint", inp(7, 0, 1, 1, 2, src=(1, sin(0, [192, 0, 2, 1])[2:]), lens=(1, 0, 0),
                               node=b"192.0.2.2", service=b"1"))
    put("gai", "af-ib", inp(7, 8 | 2, 3, 1, 4, node=b"fe80::2", service=b"7471"))
    put("gai", "route-hint", inp(4, 0, 3, 1, 4, lens=(0, 0, 2)))


def ucma_event():
    # selector, then struct rdma_ucm_event_resp: uid, id, event, status, param
    for ev in range(20):
        for sel in (0, 1, 2):
            pd = bytes(range(1, 41))
            param = struct.pack("<II", 0x11, 0) + pd + bytes(256 - len(pd)) + bytes([len(pd), 0, 1, 1, 0, 7, 7, 1])
            resp = struct.pack("<QIIi", 0, 5, ev, 0) + param
            put("ucma_event", "ev%02d-%d" % (ev, sel), bytes([sel]) + resp)


def ucma_query():
    def qa(src, dst):
        return struct.pack("<QBBHHH", 0, 1, 0, 0xffff, len(src), len(dst)) + src.ljust(128, b"\0") + \
            dst.ljust(128, b"\0") + bytes(8)

    def path(n):
        rec = bytes(8)  # service id
        rec += bytes([0xfe, 0x80] + [0] * 14) + bytes([0xfe, 0x80] + [0] * 13 + [1])
        rec += struct.pack(">HHI", 0, 0, (0 << 8) | 64) + bytes([0, 0x81]) + struct.pack(">HH", 0xffff, 0)
        rec += bytes([0x84, 0x83, 0x92, 0]) + bytes(6)
        return struct.pack("<II", n, 0) + (struct.pack("<II", 0x1, 0) + rec.ljust(64, b"\0")) * 6

    v4 = qa(sin(7471, [192, 0, 2, 1]), sin(7472, [192, 0, 2, 2]))
    v6 = qa(sin6(7471, [0xfd] + [0] * 14 + [1]), sin6(0, [0xfd] + [0] * 14 + [2]))
    ib = qa(struct.pack("<HH", AF_IB, 0xffff) + bytes(44), struct.pack("<HH", AF_IB, 0xffff) + bytes(44))
    put("ucma_query", "v4-2paths", bytes([0]) + v4 + ib + path(2))
    put("ucma_query", "v6-1path-ud", bytes([1]) + v6 + ib + path(1))
    put("ucma_query", "ib-6paths", bytes([0]) + ib + ib + path(6))
    put("ucma_query", "bad-sizes", bytes([0]) + qa(sin(1, [1, 2, 3, 4]), b"")[:8] + b"\xff\x7f\xff\x7f" + bytes(270))


def acm_reply():
    # 80 header bytes: sel, family, port space, src kind, dst kind, route,
    # pad, pad, src bytes (32), dst bytes (32), pad (8); then the reply.
    def head(sel, fam, ps, sk, dk):
        return bytes([sel, fam, ps, sk, dk, 0, 0, 0]) + bytes([0x1d, 0x2f, 192, 0, 2, 1]).ljust(32, b"\0") + \
            bytes([0x1d, 0x2f, 192, 0, 2, 2]).ljust(32, b"\0") + bytes(8)

    def ep(flags, typ, body):
        return struct.pack("<IHH", flags, typ, 0) + body.ljust(64, b"\0")

    hdr = bytes([1, 1, 0, 0, 0, 0]) + struct.pack("<H", 16 + 2 * 72) + bytes(8)
    path = bytes(8) + bytes([0xfe, 0x80] + [0] * 14) + bytes([0xfe, 0x80] + [0] * 14) + bytes(12) + \
        struct.pack(">H", 0xffff) + bytes(14)
    reply = hdr + ep(1, 2, bytes([192, 0, 2, 1])) + ep(0x2b, 0x10, path)
    put("acm_reply", "src-and-path", head(4 | 8, 0, 0, 0, 1) + reply)
    put("acm_reply", "path-v6", head(4 | 8, 1, 1, 2, 2) + reply)
    put("acm_reply", "routeonly", head(4 | 2, 0, 0, 1, 1) + reply)
    put("acm_reply", "bad-status", head(0, 0, 0, 1, 1) + hdr[:2] + b"\x05" + reply[3:])
    put("acm_reply", "short", head(4, 0, 0, 1, 1) + hdr[:10])


def rs_wire():
    cd = bytes([1, 2]) + struct.pack(">H", 384) + bytes(3) + bytes([0x81]) + \
        struct.pack(">QII", 0x7f0000001000, 0x1234, 2) + struct.pack(">QII", 0x7f0000002000, 0x5678, 65536)
    imms = b"".join(struct.pack(">I", (op << 29) | d) for op, d in ((0, 100), (4, 384), (6, 1), (7, 0), (7, 2), (7, 1), (1, 5)))
    put("rs_wire", "conn-data", cd)
    put("rs_wire", "ib-header+conn-data", bytes(36) + cd)
    put("rs_wire", "immediates", imms)
    put("rs_wire", "sgl-iomap", struct.pack("<QQII", 0x1000, 0x7f0000003000, 9, 4096) * 2)


def rs_flow():
    local = bytes([124, 191, 124, 124])  # queues 376/383, rings 128 KiB
    cd = bytes([1, 2]) + struct.pack(">H", 384) + bytes(4) + struct.pack(">QII", 0x7f0000001000, 0x1234, 2) + \
        struct.pack(">QII", 0x7f0000002000, 0x5678, 65536)
    ops = b""
    ops += bytes([0]) + struct.pack("<I", (0 << 29) | 1000)      # data 1000
    ops += bytes([4])                                            # peek
    ops += bytes([3]) + struct.pack("<I", 600)                   # read 600
    ops += bytes([3]) + struct.pack("<I", 600)                   # read the rest
    ops += bytes([5])                                            # credit update
    ops += bytes([7]) + struct.pack("<I", 5000)                  # send
    ops += bytes([8])                                            # completed
    ops += bytes([2, 1]) + struct.pack("<QII", 0x7f0000009000, 0x99, 65536)  # peer SGE in entry 1
    ops += bytes([7]) + struct.pack("<I", 200000)                # send more
    ops += bytes([0]) + struct.pack("<I", (4 << 29) | 400)       # credits
    ops += bytes([9, 24])                                        # iomap entry
    ops += bytes([6])
    ops += bytes([0]) + struct.pack("<I", (7 << 29) | 2)         # shutdown
    put("rs_flow", "session", local + cd + ops)
    put("rs_flow", "overrun", local + cd + bytes([0]) + struct.pack("<I", 65537))
    put("rs_flow", "one-entry-table", local + cd[:16] + struct.pack(">I", 1) + cd[20:] + bytes([5, 6, 5]))


def rs_dgwire():
    put("rs_dgwire", "udp-v4-data", struct.pack(">I", 0x55555555) + bytes([4, 0, 16, 0]) + struct.pack(">I", 0x123) +
        bytes([192, 0, 2, 1]) + b"payload")
    put("rs_dgwire", "udp-v6-ctrl", struct.pack(">I", 0x55555555) + bytes([6, 7, 28, 0]) + struct.pack(">I", 0x456) +
        bytes([0xfd] + [0] * 14 + [1]))
    put("rs_dgwire", "ds-v4", bytes([4, 8]) + struct.pack(">H", 7471) + bytes([192, 0, 2, 2]) + b"data")
    put("rs_dgwire", "ds-v6", bytes([6, 24]) + struct.pack(">H", 7471) + bytes(4) + bytes([0xfd] + [0] * 14 + [2]))
    put("rs_dgwire", "sockaddr-in", sin(7471, [192, 0, 2, 1]))
    put("rs_dgwire", "sockaddr-in6", sin6(7471, [0xfd] + [0] * 14 + [1]))


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    for f in (gai, ucma_event, ucma_query, acm_reply, rs_wire, rs_flow, rs_dgwire):
        f()
    for t in sorted(os.listdir(OUT)):
        n = len(os.listdir(os.path.join(OUT, t)))
        size = sum(os.path.getsize(os.path.join(OUT, t, f)) for f in os.listdir(os.path.join(OUT, t)))
        print("%-12s %3d seeds, %6d bytes" % (t, n, size))
