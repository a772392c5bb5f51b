#!/usr/bin/env python3
"""compare.py — case-by-case comparison of cm_diff outputs (used by
abi-tests/vm/tests.d/20-cm-diff.sh; one process instead of hundreds of
small ones, which matters under TCG emulation).

    compare.py DIR KERNEL EXPECTED-DIFFS CASE...

DIR holds one directory per library (v44, v65, ours), each with one file
per case (used by 20-cm-diff.sh for cm_diff, 30-conn-diff.sh for
conn_diff and 61-rsockets-diff.sh for rs_diff). The reference is v44 for
core cases and v65 for v14-* cases, or $COMPARE_REF for all.
A case passes when ours prints what the reference prints, except for the
lines documented in EXPECTED-DIFFS for this kernel: there, within the
block of LABEL (its result line "  LABEL: RESULT" and the detail lines
indented by 4 that follow), ours must have the expected line (RESULT for
the result line, the trimmed text for a detail line); that line and the
reference's line at the same place in its block are left out of the
comparison, everything else must match. An expected line written
"absent: TEXT" is a detail line of the reference's block that ours must
not print (ours has no counterpart to pair it with): it is left out of
the reference's output.

Prints "ok   CASE ...", "FAIL CASE ..." (with a diff) or "SKIP CASE: why"
per case, then a last line "counts P F K". A case whose two outputs are
the single line "  (needs ...)" (a part of the bed is missing, e.g. the
two-namespace network on 6.1) is skipped; so is a case where ours prints
"SKIP: library lacks WHAT" (a missing function), which is a failure
when the reference prints it.
"""
import difflib
import os
import sys


def read_expected(path, kernel):
    exp = {}
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.rstrip("\n").split("|", 4)]
            if len(parts) != 5:
                print(f"FAIL expected-diffs.txt: malformed line: {line.rstrip()}")
                continue
            case, k, label, want, why = parts
            if k in ("any", kernel):
                exp.setdefault(case, []).append((label, want, why))
    return exp


def block(lines, label):
    """[(index, text)] of LABEL's block, see the module doc."""
    prefix = f"  {label}: "
    out = []
    for i, l in enumerate(lines):
        if out:
            if l.startswith("    "):
                out.append((i, l.strip()))
                continue
            break
        if l.startswith(prefix):
            out.append((i, l[len(prefix):]))
    return out


def read(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return None


def main():
    d, kernel, expfile = sys.argv[1:4]
    cases = sys.argv[4:]
    expected = read_expected(expfile, kernel)
    have_v65 = os.path.isdir(os.path.join(d, "v65"))
    p = f = k = 0
    for c in cases:
        ref = os.environ.get("COMPARE_REF") or ("v65" if c.startswith("v14-") else "v44")
        if ref == "v65" and not have_v65:
            print(f"SKIP {c}: reference upstream v65 not built (abi-tests/upstream/build-v65.sh)")
            k += 1
            continue
        r = read(os.path.join(d, ref, c))
        o = read(os.path.join(d, "ours", c))
        if not o:
            print(f"FAIL {c}: no output from ours")
            f += 1
            continue
        if not r:
            print(f"FAIL {c}: no output from the reference {ref}")
            f += 1
            continue
        # "  (needs ...)": a part of the bed is missing (both runs agree)
        if o == r and len(o) == 1 and o[0].startswith("  (needs "):
            print(f"SKIP {c}: {o[0].strip()[1:-1]}")
            k += 1
            continue
        lacks = lambda out: next((l.split("SKIP: library lacks", 1)[1].strip()
                                  for l in out if "SKIP: library lacks" in l), None)
        if lacks(r):
            print(f"FAIL {c}: the reference {ref} lacks {lacks(r)}")
            f += 1
            continue
        if lacks(o):
            print(f"SKIP {c}: our library lacks {lacks(o)}")
            k += 1
            continue
        why, miss, del_o, del_r = [], [], set(), set()
        for label, want, reason in expected.get(c, []):
            ob, rb = block(o, label), block(r, label)
            if want.startswith("absent: "):
                text = want[len("absent: "):]
                j = next((n for n, (_, t) in enumerate(rb) if n > 0 and t == text and (rb[n][0] not in del_r)), None)
                if j is None or any(n > 0 and t == text for n, (_, t) in enumerate(ob)):
                    show = lambda b: " / ".join(t for _, t in b) if b else "<no such line>"
                    miss.append(f"[{label}: expected {ref}'s '{text}' and not ours, ours '{show(ob)}', {ref} '{show(rb)}'; {reason}]")
                    continue
                why.append(f"[{label}: {ref} also prints '{text}', ours does not: {reason}]")
                del_r.add(rb[j][0])
                continue
            j = next((n for n, (_, t) in enumerate(ob) if t == want), None)
            if j is None:
                show = lambda b: " / ".join(t for _, t in b) if b else "<no such line>"
                miss.append(f"[{label}: expected '{want}', ours '{show(ob)}', {ref} '{show(rb)}'; {reason}]")
                continue
            was = rb[j][1] if j < len(rb) else "<no such line>"
            note = f" (note: {ref} now agrees)" if was == want else ""
            why.append(f"[{label}: {ref} '{was}', ours '{want}': {reason}]{note}")
            del_o.add(ob[j][0])
            if j < len(rb):
                del_r.add(rb[j][0])
        rr = [l for i, l in enumerate(r) if i not in del_r]
        oo = [l for i, l in enumerate(o) if i not in del_o]
        if miss:
            print(f"FAIL {c}: documented difference not as expected: {' '.join(miss)}")
            f += 1
        elif rr == oo:
            print(f"ok   {c}" + (f" (documented difference from {ref}: {' '.join(why)})" if why else ""))
            p += 1
        else:
            print(f"FAIL {c} differs from {ref}:")
            diff = list(difflib.unified_diff(rr, oo, ref, "ours", n=1, lineterm=""))
            print("\n".join(diff[2:32]))
            f += 1
        other = "v65" if ref == "v44" else "v44"
        alt = read(os.path.join(d, other, c))
        if alt and alt != r:
            n = sum(1 for l in difflib.ndiff(r, alt) if l[:1] in "+-")
            print(f"     (note: {other} differs from {ref} here in {n} lines)")
    print(f"counts {p} {f} {k}")


main()
