#!/usr/bin/env python3
"""reports.py LOGDIR OURS-MARK — read the AddressSanitizer logs of
`make check-asan` (asan-guest.sh: one file PREFIX.EXE.PID per process that
reported anything) and judge them.

Every AddressSanitizer error whose report passes through our library (a
frame in OURS-MARK, or a function of the `rdmacm` crate) is a failure. Leaks
are counted per run (PREFIX, with the matrix's "-ours"/"-debian" suffix
taken off) and program (EXE): a leak allocated through our library fails
when the same program leaked nothing through Debian's library in the same
run; where Debian's library leaks too (a program that never frees what it
asked for), both are listed and nothing is counted. Reports that do not
touch our library are listed as information.
Prints a line "counts PASSED FAILED" last.
"""
import os
import re
import sys
from collections import defaultdict

logdir, ours_mark = sys.argv[1], sys.argv[2]
DEBIAN_MARK = "/usr/lib/x86_64-linux-gnu/librdmacm.so"


def ours(text):
    return ours_mark in text or " in rdmacm::" in text


def split_reports(text):
    """(kind, body) for each report: kind 'error' or 'leak'."""
    out = []
    for part in re.split(r"(?m)^=+\n(?===\d+==ERROR)", text):
        m = re.search(r"==\d+==ERROR: (\w+): (.*)", part)
        if not m:
            continue
        if m.group(1) == "LeakSanitizer":
            for blk in re.split(r"\n\s*\n", part):
                if re.search(r"(Direct|Indirect) leak of", blk):
                    out.append(("leak", blk.strip()))
        else:
            out.append(("error", part.strip()))
    return out


errors_ours, errors_other = [], []
leaks = defaultdict(lambda: {"ours": [], "debian": [], "other": 0})
files = sorted(os.listdir(logdir)) if os.path.isdir(logdir) else []
for f in files:
    first, _, rest = f.partition(".")
    exe, _, _pid = rest.rpartition(".")
    run = re.sub(r"-(ours|debian)$", "", first)
    if run in ("canary", "leaky"):
        continue  # the canaries: judged by asan-guest.sh
    text = open(os.path.join(logdir, f), errors="replace").read()
    for kind, body in split_reports(text):
        key = (run, exe)
        if kind == "error":
            (errors_ours if ours(body) else errors_other).append((key, body))
        elif ours(body):
            leaks[key]["ours"].append(body)
        elif DEBIAN_MARK in body:
            leaks[key]["debian"].append(body)
        else:
            leaks[key]["other"] += 1

passed = failed = 0
print(f"# {len(files)} log files in {logdir}")
if errors_ours:
    for (run, exe), body in errors_ours:
        failed += 1
        print(f"FAIL AddressSanitizer error through our library in {exe} ({run}):")
        print("\n".join("    " + l for l in body.splitlines()[:40]))
else:
    passed += 1
    print("ok   no AddressSanitizer error through our library")
# Errors outside our library (upstream's crashes on bad input, which the
# differential programs provoke on purpose): one line per kind and place.
other = defaultdict(int)
for (run, exe), body in errors_other:
    summ = next((l for l in body.splitlines() if l.startswith("SUMMARY:")), body.splitlines()[0])
    summ = re.sub(r"\+0x[0-9a-f]+", "", summ.replace("SUMMARY: AddressSanitizer: ", ""))
    other[(exe, run, summ.strip()[:150])] += 1
for (exe, run, summ), n in sorted(other.items()):
    print(f"# outside our library, {n}x in {exe} ({run}): {summ}")

leak_fail = 0
for (run, exe), d in sorted(leaks.items()):
    n_o, n_d = len(d["ours"]), len(d["debian"])
    if n_o and not n_d:
        leak_fail += 1
        print(f"FAIL {exe} ({run}): {n_o} leak(s) through our library, none through Debian's:")
        for body in d["ours"][:5]:
            print("\n".join("    " + l for l in body.splitlines()[:25]))
    elif n_o or n_d:
        print(f"# {exe} ({run}): leaks through ours {n_o}, through Debian's {n_d} (the program does not free what it asked for)")
if leak_fail:
    failed += leak_fail
else:
    passed += 1
    print("ok   no leak through our library where Debian's library leaks nothing")
others = sum(d["other"] for d in leaks.values())
print(f"# leak records outside both libraries (the programs' and tools' own): {others}")
print(f"counts {passed} {failed}")
