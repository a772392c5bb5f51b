#!/usr/bin/env bash
# run-diff.sh — rdma_getaddrinfo differential test: gai_diff's corpus run
# with the reference library and with ours (LD_LIBRARY_PATH and LD_PRELOAD),
# compared case by case. Cases using the RDMACM 1.4 flags RAI_SA/RAI_DNS
# (names sa-*, dns-*) take upstream v65 as reference, the rest Debian's v44.
# A case may differ only if expected-diffs.txt lists it, and then our output
# must match the expectation written there.
#   run-diff.sh            on this machine, in a fake sysfs (no RDMA needed),
#                          plus the no-device case (both must say ENODEV)
#   run-diff.sh --native   on a machine with a real RDMA device (the VM suite)
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
mode=fake
[ "${1:-}" = --native ] && mode=native
B=build/abi-tests
mkdir -p "$B"
if [ ! -x "$B/gai_diff" ] || [ abi-tests/gai/gai_diff.c -nt "$B/gai_diff" ]; then
	cc -O1 -Wall -Wextra -Wno-missing-field-initializers -o "$B/gai_diff" abi-tests/gai/gai_diff.c -lrdmacm ||
		{ echo "cannot build gai_diff"; echo "0 passed, 1 failed"; exit 1; }
fi
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
V65DIR=$REPO/.cache/upstream/v65-rdmacm
[ -e "$OURS" ] || { echo "no library at $OURS (run make)"; echo "0 passed, 1 failed"; exit 1; }
[ -e "$V65DIR/librdmacm.so.1" ] || { echo "no upstream v65 (run abi-tests/upstream/build-v65.sh)"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

QUIET_OK=1
source abi-tests/lib/diffcases.sh
wrap() { if [ "$mode" = fake ]; then abi-tests/fakesysfs-run.sh "$@"; else "$@"; fi; }
run() { # label env...
	local label=$1; shift
	wrap env "$@" "$B/gai_diff" >"$tmp/$label.out" 2>"$tmp/$label.err"
	split_cases "$tmp/$label.out" "$tmp/$label"
}

run ref-v44
run ref-v65 LD_LIBRARY_PATH="$V65DIR"
run libpath LD_LIBRARY_PATH="$(dirname "$OURS")"
run preload LD_PRELOAD="$OURS"

pass=0 fail=0
load_expected abi-tests/gai/expected-diffs.txt any
for c in $("$B/gai_diff" --list); do
	ref=ref-v44
	[[ $c == sa-* || $c == dns-* ]] && ref=ref-v65
	for m in libpath preload; do
		compare_case "$c" "$tmp/$ref/$c" "$tmp/$m/$c" "$m, vs $ref"
	done
done
grep -q "^case freeaddrinfo-null: ok" "$tmp/libpath.out" && pass=$((pass + 1)) || { echo "FAIL freeaddrinfo(NULL)"; fail=$((fail + 1)); }

if [ "$mode" = fake ]; then
	# No RDMA device at all: every call but the all-NULL one is -1/ENODEV, in both.
	for lib in ref libpath; do
		e=()
		[ $lib = libpath ] && e=(LD_LIBRARY_PATH="$(dirname "$OURS")")
		FAKESYSFS_NO_DEVICE=1 abi-tests/fakesysfs-run.sh env "${e[@]}" "$B/gai_diff" >"$tmp/nodev-$lib.out" 2>&1
	done
	n=$(grep -c '^case .*ret=-1 errno=ENODEV$' "$tmp/nodev-libpath.out")
	if cmp -s "$tmp/nodev-ref.out" "$tmp/nodev-libpath.out" && ((n >= 90)); then
		echo "ok   no-device: $n cases -1/ENODEV, identical to Debian's library"
		pass=$((pass + 1))
	else
		echo "FAIL no-device run differs (ours: $n ENODEV):"
		diff "$tmp/nodev-ref.out" "$tmp/nodev-libpath.out" | head -n 10
		fail=$((fail + 1))
	fi
fi
echo "rdma_getaddrinfo corpus: $("$B/gai_diff" --list | wc -l) cases x 2 modes ($mode sysfs)"
echo "$pass passed, $fail failed"
((fail == 0))
