#!/usr/bin/env python3
"""layers.py — the library's one dependency order, checked.

Every Rust file under src/ belongs to a unit (a module, or a directory
module taken whole), and units are listed below from the bottom of the
library to its top (docs/architecture.md explains each). A file may refer
(`crate::…`, `super::…`) only to units listed before its own; a reference
to a later unit, or between two different units of the same rank, is a
back-edge and fails the check. Test modules (`#[cfg(test)]` to the end of
the file) are not checked.

    layers.py [SRC_DIR]     check (default: src/ next to this script's repo)
    layers.py --self-test   show that a back-edge and a circle are caught

Ends with "N passed, M failed" (one check per file).
"""
import os
import re
import sys
import tempfile

# Bottom to top. A name ending in "/*" is a set of sibling units of one rank
# (they may not refer to each other). A unit covers its submodules unless
# they are listed themselves.
ORDER = [
    "abi",
    "error",
    "sys",
    "lock",
    "slab",
    "cmem",
    "sockaddr",
    "handle",
    "nulstr",
    "sysfs",
    "ucma",
    "verbs",
    "addr::numeric",
    "addr::wildcard",
    "addr::model",
    "addr::acm",
    "addr::sa",
    "addr::getaddrinfo",
    "addr",
    "cm::device",
    "cm::channel",
    "cm::id",
    "cm::qp",
    "cm::mcast",
    "cm::events",
    "cm::conn",
    "cm::resolve_ai",
    "cm::lifecycle",
    "cm::dispatch",
    "cm::ops",
    "cm",
    "rs::wire",
    "rs::dgwire",
    "rs::flow",
    "rs::config",
    "rs::udp",
    "rs::mem",
    "rs::signal",
    "rs::stream",
    "rs::dgqp",
    "rs::socket",
    "rs::dgram",
    "rs::engine",
    "rs::iomap",
    "rs::api",
    "rs::opts",
    "rs::poll",
    "rs::repoll",
    "rs",
    "capi",
    "capi::*",
    "fuzzing",
]


def ranks():
    r = {}
    for i, name in enumerate(ORDER):
        r[name] = i
    return r


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel == ["lib"]:
        return None
    return "::".join(rel)


def unit_of(mod, rk):
    """The listed unit a module belongs to (its longest listed prefix; a
    module under a "dir::*" entry is a unit of its own)."""
    parts = mod.split("::")
    for n in range(len(parts), 0, -1):
        p = "::".join(parts[:n])
        if p in rk:
            return p
        if n >= 2 and "::".join(parts[: n - 1] + ["*"]) in rk:
            return p
    return None


def module_for(path, modules):
    """The module an item path lives in (its longest prefix that is a file)."""
    parts = path.split("::")
    for n in range(len(parts), 0, -1):
        p = "::".join(parts[:n])
        if p in modules:
            return p
    return None


def rank_of(unit, rk):
    if unit in rk:
        return rk[unit]
    parts = unit.split("::")
    star = "::".join(parts[:-1] + ["*"])
    return rk.get(star)


def expand(prefix, rest):
    """Paths named by `prefix::rest`, where rest may hold {a, b::c} groups."""
    rest = rest.strip()
    if rest.startswith("{"):
        depth, items, cur = 0, [], ""
        for ch in rest[1:]:
            if ch == "{":
                depth += 1
            elif ch == "}":
                if depth == 0:
                    items.append(cur)
                    break
                depth -= 1
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        out = []
        for it in items:
            it = it.strip()
            if not it:
                continue
            if it == "self":
                out.append(prefix)
            else:
                head = re.match(r"(\w+)(::)?(.*)", it, re.S)
                if head.group(2):
                    out += expand(prefix + "::" + head.group(1), head.group(3))
                else:
                    out.append(prefix + "::" + head.group(1))
        return out
    m = re.match(r"(\w+)(::)?", rest)
    if not m:
        return [prefix]
    if m.group(2):
        return expand(prefix + "::" + m.group(1), rest[m.end():])
    return [prefix + "::" + m.group(1)]


def references(text, mod):
    """Module paths a file refers to (crate:: and super:: paths)."""
    refs = []
    code = text.split("#[cfg(test)]")[0]
    code = "\n".join(l for l in code.split("\n") if not l.lstrip().startswith("//"))
    parent = "::".join(mod.split("::")[:-1])
    for m in re.finditer(r"\b(crate|super)::", code):
        base = "" if m.group(1) == "crate" else parent
        rest = code[m.end():]
        for p in expand(base, rest):
            refs.append(p.lstrip(":"))
    return refs


def check(src, out=print):
    rk = ranks()
    files = []
    for d, _, fs in os.walk(src):
        files += [os.path.join(d, f) for f in fs if f.endswith(".rs")]
    modules = {module_of(src, f) for f in files} - {None}
    passed = failed = 0
    for f in sorted(files):
        mod = module_of(src, f)
        if mod is None:
            continue
        me = unit_of(mod, rk)
        if me is None:
            out(f"FAIL {f}: module {mod} is in no layer (add it to ORDER in abi-tests/layers.py)")
            failed += 1
            continue
        bad = set()
        for ref in references(open(f).read(), mod):
            m = module_for(ref, modules)
            u = m and unit_of(m, rk)
            if u is None or u == me:
                continue
            if rank_of(u, rk) >= rank_of(me, rk):
                bad.add(u)
        if bad:
            out(f"FAIL {os.path.relpath(f, src)} ({me}) refers to {', '.join(sorted(bad))}, not below it")
            failed += 1
        else:
            passed += 1
    return passed, failed


def self_test():
    """A tree with a back-edge (cm::id -> cm::dispatch) and a circle
    (addr::acm <-> addr::getaddrinfo) must fail; the clean tree must pass."""
    ok = True
    with tempfile.TemporaryDirectory() as t:
        def w(p, s):
            os.makedirs(os.path.dirname(os.path.join(t, p)), exist_ok=True)
            open(os.path.join(t, p), "w").write(s)
        w("lib.rs", "pub mod cm;\n")
        for leaf in ["abi/mod.rs", "cm/channel.rs", "cm/events.rs", "cm/ops.rs", "addr/model.rs", "addr/sa.rs"]:
            w(leaf, "")
        w("cm/mod.rs", "pub mod id;\npub mod dispatch;\n")
        w("cm/id.rs", "use super::channel::Channel;\nuse crate::abi::{self, rdma_cm_id};\n")
        w("cm/dispatch.rs", "use super::{id::Id, events};\n")
        w("addr/acm.rs", "use super::model::Hints;\n")
        w("addr/getaddrinfo.rs", "use super::{acm, sa};\n#[cfg(test)]\nmod tests { use crate::cm::ops; }\n")
        quiet = []
        p, f = check(t, quiet.append)
        if f != 0:
            print("self-test: clean tree failed:", quiet)
            ok = False
        w("cm/id.rs", "fn f() { crate::cm::dispatch::get_event(); }\n")
        w("addr/acm.rs", "use super::getaddrinfo::{AddrInfo};\n")
        msgs = []
        p, f = check(t, msgs.append)
        if f != 2 or not any("cm/id.rs" in m for m in msgs) or not any("acm.rs" in m for m in msgs):
            print("self-test: back-edges not caught:", msgs)
            ok = False
    print("self-test:", "back-edge and circle caught" if ok else "FAILED")
    return ok


def main():
    if sys.argv[1:] == ["--self-test"]:
        ok = self_test()
        print(f"{int(ok)} passed, {int(not ok)} failed")
        return 0 if ok else 1
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src")
    ok = self_test()
    p, f = check(src)
    print(f"layers: {p + f} files, {f} with a reference that is not below their layer")
    p, f = p + int(ok), f + int(not ok)
    print(f"{p} passed, {f} failed")
    return 0 if f == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
