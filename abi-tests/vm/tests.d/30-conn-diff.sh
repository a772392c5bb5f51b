#!/usr/bin/env bash
# 30-conn-diff.sh — (guest side) connection management, side by side on the
# guest's soft-RoCE device. Run by suite.sh from the repository root (host
# root read-only; results are copied to $VM_OUT/conn-diff-$VM_KERNEL).
#
# build/abi-tests/conn_diff (abi-tests/conn/conn_diff.c; built on the host
# by abi-tests/conn/build.sh) runs every case with Debian's v44 (the
# reference), optionally with upstream v65 (CONN_V65=1: a second reference,
# shows the output does not depend on the library's internals) and with ours
# (LD_LIBRARY_PATH; another library under test can be named with
# RDMACM_UNDER_TEST=/path/to/librdmacm.so.1). Server and client run over
# rxe0 (192.0.2.1, fd00::1) in the initial namespace on every kernel.
# For the device-removal case this script adds a veth pair cnv0/cnv1 with
# 198.18.1.1/24 on cnv0 and, before each library's run, an rxe device
# rxe_cnv on cnv0 (the case deletes it with `rdma link delete`); all of it is
# removed on exit.
# abi-tests/cm/compare.py compares case by case: ours must print exactly
# what v44 prints, except the lines documented in
# abi-tests/conn/expected-diffs.txt, where ours must print the documented
# expectation. Cases our library cannot run (connection functions missing)
# are skipped, never passed. CONN_SELFCHECK=1 runs v44 twice and counts one
# more result: whether both runs printed the same (the test is deterministic).
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure, 77
# when nothing could run.
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
B=build/abi-tests
work_dir conn-diff keep
net_down() {
	rdma link delete rxe_cnv 2>/dev/null
	ip link del cnv0 2>/dev/null
}
on_finish() { net_down; }

[ -x "$B/conn_diff" ] || { bad "$B/conn_diff not built (abi-tests/conn/build.sh runs on the host)"; finish; }

libdir_for() { # NAME PATH
	[ -n "$2" ] && [ -e "$2" ] || return 1
	mkdir -p "$tmp/lib-$1" && ln -sf "$(readlink -f "$2")" "$tmp/lib-$1/librdmacm.so.1" && echo "$tmp/lib-$1"
}
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
OURS_DIR=$(libdir_for ours "$OURS") || { skp "our library $OURS is not built"; finish; }
V65_DIR=""
if [ "${CONN_V65:-0}" = 1 ] && [ -f .cache/upstream/v65-libdir ]; then
	V65_DIR=$(libdir_for v65 "$(cat .cache/upstream/v65-libdir)/librdmacm.so.1") || V65_DIR=""
fi
echo "# kernel $(uname -r) ($KERNEL), $(cat /run/rdmacm-net-mode 2>/dev/null || echo single) network"
echo "# ours: $(readlink -f "$OURS"); reference: Debian's v44${V65_DIR:+; also upstream v65}"

# The dedicated device for the device-removal case.
DEVREM=()
if [ -n "${RDMACM_ASAN:-}" ]; then
	# Under `make check-asan` (abi-tests/asan/) the case is left out: with
	# every process slowed by the sanitizer, the removal of rxe_cnv during
	# Debian's run (its library opens every device at start) never
	# finished on 6.1 (`rdma link delete` stayed blocked, and so did the
	# next `rdma` and `ps` after it), which stalled the rest of the run.
	echo "# device-removal left out under AddressSanitizer (see the comment here)"
elif ip link add cnv0 type veth peer name cnv1 2>/dev/null &&
	ip addr add 198.18.1.1/24 dev cnv0 && ip link set cnv0 up && ip link set cnv1 up; then
	DEVREM=(CONN_DEVREM_IP=198.18.1.1 CONN_DEVREM_DEV=rxe_cnv)
else
	echo "# could not set up the veth pair cnv0/cnv1: device-removal will be skipped"
fi
trap net_down EXIT
devrem_up() { # (re)create rxe_cnv and wait until it is ACTIVE
	local i
	((${#DEVREM[@]})) || return 0
	# a deletion by the previous run finishes when that process is gone
	for i in $(seq 1 100); do
		pgrep -x rdma >/dev/null || break
		sleep 0.1
	done
	rdma link show rxe_cnv/1 >/dev/null 2>&1 || rdma link add rxe_cnv type rxe netdev cnv0 2>/dev/null
	for i in $(seq 1 50); do
		rdma link show rxe_cnv/1 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.1
	done
	echo "# rxe_cnv did not come up: $(rdma link show rxe_cnv/1 2>&1 | head -n1)"
}

mapfile -t CASES < <("$B/conn_diff" --list)
split_cases() { awk -v d="$2" '/^case / { n = $2; sub(/:$/, "", n); f = d "/" n; next } f { print > f }' "$1"; }
run_lib() { # LABEL LIBDIR (empty: Debian's)
	local l=$1 env=() t0=$SECONDS
	[ -n "$2" ] && env=(LD_LIBRARY_PATH="$2")
	mkdir -p "$tmp/$l"
	devrem_up
	timeout -k 5 400 env "${DEVREM[@]}" "${env[@]}" "$B/conn_diff" >"$tmp/$l.out" 2>"$tmp/$l.err"
	echo "exit $?" >>"$tmp/$l.err"
	split_cases "$tmp/$l.out" "$tmp/$l"
	echo "# conn_diff with $l: $((SECONDS - t0)) s (slowest: $(sort -t: -k2 -rn "$tmp/$l.err" |
		grep -E '^[a-z0-9-]+: [0-9.]+ s$' | head -n 3 | tr '\n' ' '))"
}
run_lib v44 ""
[ -n "$V65_DIR" ] && run_lib v65 "$V65_DIR"
run_lib ours "$OURS_DIR"
# CONN_SELFCHECK=1: v44 a second time; the two runs must print the same
if [ "${CONN_SELFCHECK:-0}" = 1 ]; then
	run_lib v44-again ""
	differ=()
	for c in "${CASES[@]}"; do cmp -s "$tmp/v44/$c" "$tmp/v44-again/$c" || differ+=("$c"); done
	if ((${#differ[@]})); then
		bad "self-check: v44 printed differently in two runs: ${differ[*]}"
	else
		ok "self-check: v44 printed the same in two runs (${#CASES[@]} cases)"
	fi
fi

python3 abi-tests/cm/compare.py "$tmp" "$KERNEL" abi-tests/conn/expected-diffs.txt "${CASES[@]}" \
	>"$tmp/compare.out" 2>&1
grep -v '^counts ' "$tmp/compare.out"
read -r _ p f k < <(grep '^counts ' "$tmp/compare.out" || echo "counts 0 1 0")
pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + k))
finish
