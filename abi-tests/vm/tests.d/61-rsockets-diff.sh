#!/usr/bin/env bash
# 61-rsockets-diff.sh — (guest side) rsocket semantics side by side:
# build/abi-tests/rs_diff (abi-tests/rsdiff/rs_diff.c, built on the host by
# abi-tests/rsdiff/build.sh) runs every case with Debian's v44, upstream
# v65 and ours (LD_LIBRARY_PATH; $RDMACM_UNDER_TEST names another library
# under test). abi-tests/cm/compare.py compares case by case against v65
# (COMPARE_REF=v65: the newer reference; where v44 differs, a note says
# so): ours must print exactly what v65 prints, except the lines documented
# in abi-tests/rsdiff/expected-diffs.txt (upstream crashes, writes past the
# caller's buffer, or reports sends on a dead connection as done).
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure, 77
# when nothing could run.
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
B=build/abi-tests
work_dir rs-diff keep
[ -x "$B/rs_diff" ] || { bad "$B/rs_diff not built (abi-tests/rsdiff/build.sh runs on the host)"; finish; }
libdir_for() { # NAME PATH
	[ -n "$2" ] && [ -e "$2" ] || return 1
	mkdir -p "$tmp/lib-$1" && ln -sf "$(readlink -f "$2")" "$tmp/lib-$1/librdmacm.so.1" && echo "$tmp/lib-$1"
}
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
OURS_DIR=$(libdir_for ours "$OURS") || { skp "our library $OURS is not built"; finish; }
V65_DIR=$(libdir_for v65 "$REPO/.cache/upstream/v65-rdmacm/librdmacm.so.1") ||
	{ bad "upstream v65 not built (abi-tests/upstream/build-v65.sh)"; finish; }
mapfile -t CASES < <("$B/rs_diff" --list)
split_cases() { awk -v d="$2" '/^case / { n = $2; sub(/:$/, "", n); f = d "/" n; next } f { print > f }' "$1"; }
run_lib() { # LABEL LIBDIR (empty: Debian's)
	local l=$1 env=() t0=$SECONDS
	[ -n "$2" ] && env=(LD_LIBRARY_PATH="$2")
	mkdir -p "$tmp/$l"
	timeout -k 5 500 env "${env[@]}" "$B/rs_diff" >"$tmp/$l.out" 2>"$tmp/$l.err"
	echo "exit $?" >>"$tmp/$l.err"
	split_cases "$tmp/$l.out" "$tmp/$l"
	echo "# rs_diff with $l: $((SECONDS - t0)) s"
}
run_lib v44 ""
run_lib v65 "$V65_DIR"
run_lib ours "$OURS_DIR"
COMPARE_REF=v65 python3 abi-tests/cm/compare.py "$tmp" "$KERNEL" abi-tests/rsdiff/expected-diffs.txt "${CASES[@]}" \
	>"$tmp/compare.out" 2>&1
grep -v '^counts ' "$tmp/compare.out"
read -r _ p f k < <(grep '^counts ' "$tmp/compare.out" || echo "counts 0 1 0")
pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + k))
finish
