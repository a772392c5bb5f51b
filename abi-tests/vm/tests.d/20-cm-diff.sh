#!/usr/bin/env bash
# 20-cm-diff.sh — (guest side) the CM core, side by side on the guest's
# soft-RoCE devices. Run by suite.sh from the repository root (host root
# read-only; results are copied to $VM_OUT/cm-diff-$VM_KERNEL).
#
#  1. build/abi-tests/cm_diff (abi-tests/cm/cm_diff.c; built on the host by
#     abi-tests/cm/build.sh) runs every case with the reference library and
#     with ours (LD_LIBRARY_PATH; another library under test can be named
#     with RDMACM_UNDER_TEST=/path/to/librdmacm.so.1). The reference is
#     Debian's v44 for the core cases and upstream v65 (built on the host by
#     abi-tests/upstream/build-v65.sh) for the v14-* cases (RDMACM_1.4).
#     On the two-namespace bed (kernels >= 6.18) the peer-* cases run inside
#     namespace a, resolving 192.0.2.2 in namespace b. For the timeout-*
#     cases this script adds a veth pair with an rxe device in the initial
#     namespace (198.18.0.1/24 on cmv0, ARP for 198.18.0.99 unanswered) and
#     removes it on exit.
#     abi-tests/cm/compare.py compares case by case: ours must print exactly
#     what the reference prints, except the lines documented in
#     abi-tests/cm/expected-diffs.txt, where ours must print the documented
#     expectation. Cases our library cannot run (RDMACM_1.4 symbols missing)
#     are skipped, never passed; so are cases whose part of the bed is
#     missing (peer-* on 6.1).
#  2. build/abi-tests/cm_threads: 8 threads x 200 cycles of create / bind /
#     resolve addr / resolve route / destroy, in three modes (one shared
#     channel with a dispatcher thread, a channel per thread, sync ids),
#     with a watchdog: ours, and Debian's v44 to show the test is sound.
#  3. Leak check: cm_threads under valgrind with ours, 4 threads x 5 cycles
#     (valgrind under TCG is slow) plus the other allocating paths (-x).
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure, 77
# when nothing could run.
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
B=build/abi-tests
work_dir cm-diff keep

for p in cm_diff cm_threads; do
	[ -x "$B/$p" ] || { bad "$B/$p not built (abi-tests/cm/build.sh runs on the host)"; finish; }
done

# A directory holding the library (any file name) as librdmacm.so.1, for
# LD_LIBRARY_PATH; the library's own directory may hold other rdma-core
# libraries, which must not come along.
libdir_for() { # NAME PATH
	[ -n "$2" ] && [ -e "$2" ] || return 1
	mkdir -p "$tmp/lib-$1" && ln -sf "$(readlink -f "$2")" "$tmp/lib-$1/librdmacm.so.1" && echo "$tmp/lib-$1"
}
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
OURS_DIR=$(libdir_for ours "$OURS") || { skp "our library $OURS is not built"; finish; }
V65_LIB=""
[ -f .cache/upstream/v65-libdir ] && V65_LIB=$(cat .cache/upstream/v65-libdir)/librdmacm.so.1
V65_DIR=$(libdir_for v65 "$V65_LIB") || V65_DIR=""
echo "# kernel $(uname -r) ($KERNEL), $(cat /run/rdmacm-net-mode 2>/dev/null || echo single) network"
v65_show=missing
[ -n "$V65_DIR" ] && v65_show=$(readlink -f "$V65_LIB")
echo "# ours: $(readlink -f "$OURS"); v44: Debian's; v65: $v65_show"
PAIR=0
[ "$(cat /run/rdmacm-net-mode 2>/dev/null)" = pair ] && PAIR=1

# For ADDR_ERROR after a timeout on every kernel: a veth pair in the initial
# namespace, 198.18.0.1/24 and an rxe device on cmv0, cmv1 up without an
# address (ARP for 198.18.0.99 goes unanswered). Removed again on exit.
TIMEOUT_NET=()
net_down() {
	rdma link delete rxe_cmv 2>/dev/null
	ip link del cmv0 2>/dev/null
}
if ip link add cmv0 type veth peer name cmv1 2>/dev/null; then
	trap net_down EXIT
	if ip addr add 198.18.0.1/24 dev cmv0 && ip link set cmv0 up && ip link set cmv1 up &&
		rdma link add rxe_cmv type rxe netdev cmv0; then
		TIMEOUT_NET=(CM_TIMEOUT_NET=1)
	else
		echo "# could not set up the veth pair with rxe_cmv: timeout-* cases will be skipped"
	fi
fi
mapfile -t CASES < <("$B/cm_diff" --list)
PEER_CASES=()
for c in "${CASES[@]}"; do [[ $c == peer-* ]] && PEER_CASES+=("$c"); done

# Split "case NAME:" sections into one file per case.
split_cases() { awk -v d="$2" '/^case / { n = $2; sub(/:$/, "", n); f = d "/" n; next } f { print > f }' "$1"; }
run_lib() { # LABEL LIBDIR (empty: Debian's)
	local l=$1 env=() t0=$SECONDS
	[ -n "$2" ] && env=(LD_LIBRARY_PATH="$2")
	mkdir -p "$tmp/$l"
	timeout -k 5 600 env "${TIMEOUT_NET[@]}" "${env[@]}" "$B/cm_diff" >"$tmp/$l.out" 2>"$tmp/$l.err"
	echo "exit $?" >>"$tmp/$l.err"
	split_cases "$tmp/$l.out" "$tmp/$l"
	if ((PAIR)); then
		timeout -k 5 300 ip netns exec a env CM_PEER=1 "${env[@]}" "$B/cm_diff" "${PEER_CASES[@]}" \
			>"$tmp/$l.peer" 2>>"$tmp/$l.err"
		split_cases "$tmp/$l.peer" "$tmp/$l"
	fi
	echo "# cm_diff with $l: $((SECONDS - t0)) s"
}
run_lib v44 ""
[ -n "$V65_DIR" ] && run_lib v65 "$V65_DIR"
run_lib ours "$OURS_DIR"

# Case-by-case comparison (abi-tests/cm/compare.py: documented differences
# from abi-tests/cm/expected-diffs.txt, skips, a diff per failing case).
t0=$SECONDS
python3 abi-tests/cm/compare.py "$tmp" "$KERNEL" abi-tests/cm/expected-diffs.txt "${CASES[@]}" \
	>"$tmp/compare.out" 2>&1
grep -v '^counts ' "$tmp/compare.out"
read -r _ p f k < <(grep '^counts ' "$tmp/compare.out" || echo "counts 0 1 0")
pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + k))
echo "# comparison: $((SECONDS - t0)) s"

# thread test: ours (must pass), then Debian's v44 (shows the test is sound)
threads() { # LABEL LIBDIR HARD-TIMEOUT ARGS...
	local l=$1 d=$2 t=$3 env=() rc t0=$SECONDS
	shift 3
	[ -n "$d" ] && env=(LD_LIBRARY_PATH="$d")
	timeout -k 5 "$t" env "${env[@]}" "$B/cm_threads" "$@" >"$tmp/threads-$l" 2>&1
	rc=$?
	echo "# cm_threads with $l: $((SECONDS - t0)) s"
	((rc == 124 || rc == 137)) && echo "hard timeout after ${t}s (deadlock?)" >>"$tmp/threads-$l"
	if ((rc == 0)); then
		ok "threads [$l]: $(grep -v '^threads:' "$tmp/threads-$l" | sed 's/^ok *mode //' | tr '\n' ';')"
	else
		bad "threads [$l] (exit $rc): $(tr '\n' ';' <"$tmp/threads-$l")"
	fi
}
threads ours "$OURS_DIR" 300 -t 8 -c 200 -T 280
threads v44 "" 300 -t 8 -c 200 -T 280

# Leak check of ours under valgrind: the thread test with fewer threads and
# cycles (valgrind under TCG is slow) and with -x, which adds the other
# allocating paths (devices, migrate, failures, unread events, RDMACM_1.4).
# (For a closer look: valgrind build/abi-tests/cm_diff --no-fork CASE...)
VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
	--error-exitcode=99)
vg_summary() { # LOG
	grep -E "definitely lost:|indirectly lost:|ERROR SUMMARY:" "$1" | sed 's/^==[0-9]*== *//; s/ (suppressed.*//' |
		tr '\n' ';'
}
if [ -n "${RDMACM_ASAN:-}" ]; then
	# Under `make check-asan` (abi-tests/asan/): every process already runs
	# with AddressSanitizer, which cannot share one with valgrind; the same
	# allocating paths run plainly, and check-asan reads the sanitizer's logs.
	t0=$SECONDS
	timeout -k 5 300 env LD_LIBRARY_PATH="$OURS_DIR" "$B/cm_threads" -t 4 -c 20 -x -T 280 \
		>"$tmp/asan-threads.out" 2>&1
	rc=$?
	echo "# cm_threads -x under AddressSanitizer: $((SECONDS - t0)) s"
	if ((rc == 0)); then
		ok "threads -x under AddressSanitizer [ours]"
	else
		bad "threads -x under AddressSanitizer [ours] (exit $rc): $(tail -n 5 "$tmp/asan-threads.out" | tr '\n' ';')"
	fi
elif command -v valgrind >/dev/null; then
	VG_T=(-t 4 -c 5 -x -T 280)
	t0=$SECONDS
	timeout -k 5 300 env LD_LIBRARY_PATH="$OURS_DIR" "${VG[@]}" --log-file="$tmp/vg-threads.log" \
		"$B/cm_threads" "${VG_T[@]}" >"$tmp/vg-threads.out" 2>&1
	rc=$?
	echo "# cm_threads under valgrind: $((SECONDS - t0)) s"
	if ((rc == 0)); then
		ok "leak check: threads under valgrind [ours] (${VG_T[*]}): $(vg_summary "$tmp/vg-threads.log")"
	else
		bad "leak check: threads under valgrind [ours] (${VG_T[*]}, exit $rc): $(vg_summary "$tmp/vg-threads.log")" \
			"$(tr '\n' ';' <"$tmp/vg-threads.out")"
		grep -A14 -E "definitely lost in|indirectly lost in|Invalid (read|write|free)|uninitialised|Mismatched" \
			"$tmp/vg-threads.log" | sed 's/^==[0-9]*== */     /' | head -n 60
	fi
else
	skp "leak check: no valgrind"
fi
finish
