#!/usr/bin/env bash
# 40-pyverbs.sh — (guest side) rdma-core's own librdmacm tests: the
# CMTestCase tests of upstream v65's tests/test_rdmacm.py (sync and async
# RC traffic, reject, UD "connect", multicast join/leave, external QP with
# ECE and rdma_establish, RDMA read/write, rdma_resolve_addrinfo), run by
# pyverbs on rxe0 (192.0.2.1 on dummy d0; both sides of each test talk over
# that one address). Run by suite.sh from the repository root; logs and
# results go to $VM_OUT/pyverbs-$VM_KERNEL.
#
# Built on the host: upstream v65 by abi-tests/upstream/build-v65.sh, its
# pyverbs by abi-tests/upstream/build-pyverbs.sh (.cache/upstream/v65-pyverbs
# names the PYTHONPATH directory). abi-tests/pyverbs/cm_tests.py runs the
# tests with rdma-core's harness and records each outcome.
#
# Two runs on the whole v65 stack (LD_LIBRARY_PATH = v65's build/lib, so
# libibverbs 65 and its rxe provider): the reference, v65's librdmacm; then
# ours, $RDMACM_UNDER_TEST (default build/librdmacm.so.1) through LD_PRELOAD
# on top of it (the run checks which librdmacm and libibverbs pyverbs really
# mapped). Ours must get v65's outcome, test by test:
#   both pass                passed
#   both skip                skipped
#   both fail                skipped (nothing to compare; a sound bed has no
#                            v65 failure except the one below)
#   anything else            FAILED (ours passing where v65 fails or skips
#                            counts too; so does a test ours never reported)
#   v65 never reported it    skipped (its run broke; see v65.log)
# Tests whose outcomes differ are re-run once with both libraries (at most 4;
# the re-run decides and the line shows the first run's outcomes). A
# reference run in which no test passed (every test skipped, or the run
# broke) is one more failure: the bed cannot run the tests.
# Expected with v65: all 11 pass on kernel >= 6.17; on 6.1,
# test_rdmacm_async_resolve_addrinfo cannot pass (the kernel lacks the
# RDMA_USER_CM_CMD_WRITE_CM_EVENT command that rdma_resolve_addrinfo needs).
# PYVERBS_TESTS="name ..." limits the runs to those tests.
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure, 77
# when nothing could be compared.
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
DEV=${PYVERBS_DEV:-rxe0}
RUN_TIMEOUT=${PYVERBS_RUN_TIMEOUT:-240}
work_dir pyverbs keep

U=.cache/upstream
V65_LIB=$(cat "$U/v65-libdir" 2>/dev/null) || V65_LIB=""
PYDIR=$(cat "$U/v65-pyverbs" 2>/dev/null) || PYDIR=""
if [ -z "$V65_LIB" ] || [ ! -e "$V65_LIB/librdmacm.so.1" ]; then
	bad "upstream v65 not built (abi-tests/upstream/build-v65.sh runs on the host)"
	finish
fi
if [ -z "$PYDIR" ] || ! compgen -G "$PYDIR/pyverbs/cmid.*.so" >/dev/null; then
	bad "pyverbs not built (abi-tests/upstream/build-pyverbs.sh runs on the host)"
	finish
fi
SRC=$(cd "$PYDIR/../.." && pwd)
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
case $OURS in /*) ;; *) OURS=$REPO/$OURS ;; esac
echo "# kernel $(uname -r) ($KERNEL), device $DEV, $(ip -br addr show d0 2>/dev/null | tr -s ' ')"
echo "# v65: $V65_LIB; pyverbs: $PYDIR; ours: $OURS"

only=()
[ -n "${PYVERBS_TESTS:-}" ] && only=(--only $PYVERBS_TESTS)
run() { # LABEL RDMACM-TO-PRELOAD-OR-EMPTY [TEST...]
	local l=$1 pre=() sel=("${only[@]}") t0=$SECONDS rc
	[ -n "$2" ] && pre=(LD_PRELOAD="$2")
	(($# > 2)) && sel=(--only "${@:3}")
	timeout -k 5 "$RUN_TIMEOUT" env LD_LIBRARY_PATH="$V65_LIB" PYTHONPATH="$PYDIR" PYTHONDONTWRITEBYTECODE=1 \
		"${pre[@]}" /usr/bin/python3 abi-tests/pyverbs/cm_tests.py --src "$SRC" --dev "$DEV" \
		--results "$tmp/$l.res" "${sel[@]}" >"$tmp/$l.log" 2>&1
	rc=$?
	((rc == 124 || rc == 137)) && echo "TIMEOUT: killed after ${RUN_TIMEOUT}s" >>"$tmp/$l.log"
	echo "# $l: exit $rc, $((SECONDS - t0)) s"
}
# outcome LABEL TEST -> "pass|skip|fail SECONDS DETAIL", or "none" if not reported
outcome() { awk -v t="$2" '$1 == "result" && $2 == t { $1 = $2 = ""; sub(/^ +/, ""); print; f = 1; exit } END { if (!f) print "none" }' "$tmp/$1.res" 2>/dev/null || echo none; }
detail() { cut -d' ' -f3- <<<"$1"; }
# check_libs LABEL RDMACM: the run mapped exactly that librdmacm and v65's
# libibverbs; otherwise its results are moved aside (they count as not run).
check_libs() {
	local want_cm want_v got_cm got_v
	[ -s "$tmp/$1.res" ] || return 0
	want_cm=$(readlink -f "$2") want_v=$(readlink -f "$V65_LIB/libibverbs.so.1")
	got_cm=$(awk '$1 == "lib" && $2 ~ /\/librdmacm\.so[^\/]*$/ { print $2 }' "$tmp/$1.res" | tr '\n' ' ')
	got_v=$(awk '$1 == "lib" && $2 ~ /\/libibverbs\.so[^\/]*$/ { print $2 }' "$tmp/$1.res" | tr '\n' ' ')
	[ "$got_cm" = "$want_cm " ] && [ "$got_v" = "$want_v " ] && return 0
	bad "$1 run used the wrong libraries: librdmacm ${got_cm:-none} (want $want_cm), libibverbs ${got_v:-none} (want $want_v)"
	mv "$tmp/$1.res" "$tmp/$1.res.wrong-lib"
}
run_ours() { # LABEL [TEST...]
	if [ -e "$OURS" ]; then
		run "$1" "$OURS" "${@:2}"
		check_libs "$1" "$OURS"
	else
		echo "# $1: $OURS does not exist (run make): its tests count as not run"
		: >"$tmp/$1.res"
	fi
}

run v65 ""
check_libs v65 "$V65_LIB/librdmacm.so.1"
mapfile -t TESTS < <(awk '$1 == "plan" { print $2 }' "$tmp/v65.res" 2>/dev/null)
if ((${#TESTS[@]} == 0)); then
	bad "reference run (v65) did not start: $(tail -n 3 "$tmp/v65.log" | tr '\n' ';')"
	finish
fi
ref_pass=0
for t in "${TESTS[@]}"; do
	[[ $(outcome v65 "$t") == pass* ]] && ref_pass=$((ref_pass + 1))
done
((ref_pass)) ||
	bad "reference run (v65): no test passed, the bed cannot run them: $(grep -m1 '^result' "$tmp/v65.res" | cut -d' ' -f2-)"
run_ours ours

# Tests whose outcomes differ run once more with both libraries, alone (a
# slow moment under TCG can break a test's 15 s barrier or 30 s limit); the
# re-run decides, and the line says what the first run gave. Not when more
# than 4 differ: that is no accident.
declare -A FIRST=()
differ=()
for t in "${TESTS[@]}"; do
	r=$(outcome v65 "$t") o=$(outcome ours "$t")
	[ "${r%% *}" = "${o%% *}" ] && [ "${r%% *}" != none ] || differ+=("$t")
done
if ((${#differ[@]} > 0 && ${#differ[@]} <= 4)); then
	echo "# outcomes differ in ${differ[*]}: re-running them with both libraries"
	run v65-rerun "" "${differ[@]}"
	check_libs v65-rerun "$V65_LIB/librdmacm.so.1"
	run_ours ours-rerun "${differ[@]}"
	for t in "${differ[@]}"; do
		r=$(outcome v65 "$t") o=$(outcome ours "$t")
		FIRST[$t]="first run: v65 ${r%% *}, ours ${o%% *}"
	done
fi

old_kernel=0
[ "$(printf '%s\n' 6.17 "$(uname -r)" | sort -V | head -n1)" = 6.17 ] || old_kernel=1
for t in "${TESTS[@]}"; do
	lr=v65 lo=ours
	[ -n "${FIRST[$t]:-}" ] && lr=v65-rerun lo=ours-rerun
	r=$(outcome $lr "$t") o=$(outcome $lo "$t")
	rk=${r%% *} k=${o%% *}
	note=""
	[ -n "${FIRST[$t]:-}" ] && note="; re-run, ${FIRST[$t]}"
	show="v65 $rk $(cut -d' ' -f2 <<<"$r")s, ours $k $(cut -d' ' -f2 <<<"$o")s$note"
	why=""
	[ "$t" = test_rdmacm_async_resolve_addrinfo ] && ((old_kernel)) &&
		why="expected before kernel 6.17: no RDMA_USER_CM_CMD_WRITE_CM_EVENT; "
	case $rk/$k in
	pass/pass) ok "$t ($show)" ;;
	skip/skip) skp "$t: skipped with both ($(detail "$r"); $show)" ;;
	fail/fail) skp "$t: fails with both, nothing to compare (${why}v65: $(detail "$r"); ours: $(detail "$o"); $show)" ;;
	none/*) skp "$t: v65 never reported it (run crashed or timed out; see $lr.log); ours $k$note" ;;
	*/none) bad "$t: v65 $rk, ours never reported it (run crashed or timed out; see $lo.log)$note" ;;
	*) bad "$t: v65 $rk${why:+ ($why)}, ours $k: $(detail "$o") ($show)" ;;
	esac
done
finish
