#!/usr/bin/env bash
# 70-fault.sh — (guest side) the allocation-failure walk on the real
# kernel: every allocation point of each scenario of
# abi-tests/fault/fault_walk.c made to fail in turn (failmalloc.so
# preloaded; built on the host by abi-tests/fault/build.sh), with our
# library and, when FAULT_V44=1, Debian's v44 beside it (the reference figure, not judged).
# suite-timeout: 600
#
# Scenarios (over rxe0, 192.0.2.1 / fd00::1): ids (event channel, async
# and sync ids, bind, resolve addr and route, device list), conn (listen,
# connect with QPs and private data, accept, disconnect, reject), ep (sync
# ids: rdma_create_ep, rdma_get_request, rdma_accept, rdma_connect in a
# second thread), mcast (UD QP, join, leave), rstream (rsockets stream:
# connect, accept, 64 KiB each way, close), rdgram (datagram rsockets: a
# datagram each way), gai (rdma_getaddrinfo with a real device; the host
# walks it too, abi-tests/fault/host.sh).
#
# Ours: every point (k = 1, 2, ... until a run ends before its k-th
# allocation). Passes when the walk found points, no run aborted and none
# hung, and the library stayed usable after every failure of its own
# allocations (a run where another library's allocation failed and left
# that library unusable is counted and shown, not judged: libibverbs never
# retries a provider whose registration failed in its constructor).
# Debian's v44 makes ~350 allocations per scenario, and in rstream its
# runs take many seconds each (one with nothing failing over 10 s; failed ones
# often until the 20 s run timeout); to keep this script within a few
# minutes it walks every point up to FAULT_V44_DENSE (20), then about
# FAULT_V44_SAMPLES (20) points spread over the rest, each scenario
# stopped after FAULT_V44_BUDGET seconds (120; what was seen so far is
# shown), only when FAULT_V44=1 (it is information, and make test's time
# budget is better spent on the walks that are judged). Its
# datagram rsockets cannot run on soft-RoCE (see
# 64-rsockets-dgram.sh):
# "not walked".
# The walks' output is kept in $VM_OUT/fault-$VM_KERNEL/.
# Ends with "N passed, M failed, K skipped" (one result per scenario of
# ours; v44's lines are information).
# suite-kernel: 6.1
# (make test runs it in one boot; the 7.3 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
B=build/abi-tests
work_dir fault keep
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
case $OURS in /*) ;; *) OURS=$REPO/$OURS ;; esac
[ -x "$B/fault_walk" ] && [ -e "$B/failmalloc.so" ] ||
	{ bad "$B/fault_walk or failmalloc.so not built (abi-tests/fault/build.sh runs on the host)"; finish; }
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
mkdir -p "$tmp/lib-ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/lib-ours/librdmacm.so.1"
SHIM=$REPO/$B/failmalloc.so
echo "# kernel $(uname -r) ($KERNEL); ours: $(readlink -f "$OURS"); reference: Debian's v44"

# walk LABEL SCENARIO ARGS...: the walk's summary line (ours: no time
# limit but the script's; v44: FAULT_V44_BUDGET seconds)
walk() {
	local label=$1 s=$2 env=() limit=()
	shift 2
	if [ "$label" = ours ]; then
		env=(LD_LIBRARY_PATH="$tmp/lib-ours")
	else
		limit=(timeout "${FAULT_V44_BUDGET:-120}")
	fi
	local t0=$SECONDS rc
	"${limit[@]}" env "${env[@]}" LD_PRELOAD="$SHIM" "$B/fault_walk" --label "$label" "$@" "$s" \
		>"$tmp/$s-$label.txt" 2>"$tmp/$s-$label.err"
	rc=$?
	if ((rc == 124)); then
		echo "$s $label: stopped after ${FAULT_V44_BUDGET:-120} s, so far $(grep -c '^  k=[0-9]*: hang' "$tmp/$s-$label.txt") hangs and $(grep -cE '^  k=[0-9]*: (abort|exit)' "$tmp/$s-$label.txt") aborts ($((SECONDS - t0)) s)"
	else
		echo "$(tail -n1 "$tmp/$s-$label.txt") ($((SECONDS - t0)) s)"
	fi
}

re='^([a-z]+) ours: ([0-9]+) points, [0-9]+ runs, [0-9]+ ok, [0-9]+ errors, [0-9]+ lost, ([0-9]+) aborts, ([0-9]+) hangs, ([0-9]+) unusable after \(([0-9]+) after'
# Our walks in two lanes at once (the guest has two CPUs and one walk keeps
# about one busy; the scenarios bind port 0, so they do not meet), each
# lane's scenarios one after another; rstream alone afterwards (how many
# allocations one of its runs makes varies with timing, and the walk ends
# at the first run that makes fewer than its point: beside another walk
# its runs made fewer, 76 points walked against 98-106 alone).
# FAULT_LANES=1: all in one lane. Judged below in the usual order.
walk_ours() { # scenario
	local wait_ms=()
	# (rdgram: a lost datagram is waited for 2 s, not 5; UD may drop one)
	[ "$1" = rdgram ] && wait_ms=(--wait 2000)
	walk ours "$1" --timeout 20 "${wait_ms[@]}" >"$tmp/$1-line"
}
if [ "${FAULT_LANES:-2}" = 1 ]; then
	for s in ids conn ep mcast rstream rdgram gai; do walk_ours "$s"; done
else
	(for s in rdgram gai; do walk_ours "$s"; done) &
	lane=$!
	for s in ids conn ep mcast; do walk_ours "$s"; done
	wait "$lane"
	walk_ours rstream
fi
for s in ids conn ep mcast rstream rdgram gai; do
	line=$(cat "$tmp/$s-line" 2>/dev/null)
	echo "  $line"
	if [[ $line =~ $re ]] && grep -q "^# library: $tmp/lib-ours/librdmacm.so.1\$" "$tmp/$s-ours.txt"; then
		if ((BASH_REMATCH[2] > 0 && BASH_REMATCH[3] == 0 && BASH_REMATCH[4] == 0 && BASH_REMATCH[6] == 0)); then
			ok "$s: our library survives every allocation failure (${BASH_REMATCH[2]} points)"
		else
			bad "$s: ours (see $OUT/fault-$KERNEL/$s-ours.txt)"
			grep -E '^  k=' "$tmp/$s-ours.txt" | head -n 10
		fi
	else
		bad "$s: the walk of our library did not complete (see $OUT/fault-$KERNEL/$s-ours.txt)"
		tail -n 3 "$tmp/$s-ours.txt"
	fi
	# the reference figure on request, to keep make test short
	[ -n "${FAULT_V44:-}" ] &&
		echo "  $(walk v44 "$s" --timeout 20 --dense "${FAULT_V44_DENSE:-20}" --samples "${FAULT_V44_SAMPLES:-20}")"
done
finish
