#!/usr/bin/env bash
# CM core, side by side on the guest's soft-RoCE devices: cm_diff's cases
# with the reference (Debian's v44; upstream v65 for the v14-* cases of
# RDMACM_1.4) and with our library (LD_LIBRARY_PATH), compared case by case;
# differences only where abi-tests/cm/expected-diffs.txt documents them, and
# then ours must show the expectation written there. Then the thread test
# (8 threads x 200 cycles on one shared and on separate channels) with both
# libraries.
set -uo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
OURS_DIR=$(dirname "$OURS")
V65=$REPO/.cache/upstream/v65-rdmacm
BIN=build/abi-tests/cm_diff
KERNEL=${VM_KERNEL:-$(uname -r)}
tmp=$(mktemp -d)
pass=0 fail=0 skip=0
[ -x "$BIN" ] || { echo "FAIL cm_diff not built"; echo "0 passed, 1 failed"; exit 1; }

source abi-tests/lib/diffcases.sh
run() { # label env...
	local l=$1; shift
	mkdir -p "$tmp/$l"
	timeout 120 env "$@" "$BIN" >"$tmp/$l.out" 2>"$tmp/$l.err"
	echo "exit $?" >>"$tmp/$l.err"
	split_cases "$tmp/$l.out" "$tmp/$l"
	if [ "$(cat /run/rdmacm-net-mode 2>/dev/null)" = pair ]; then
		for c in async-peer peer-unreachable; do
			CM_PEER=1 timeout 60 ip netns exec a env "$@" "$BIN" $c >"$tmp/$l/$c" 2>&1
		done
	fi
}
run v44 CM_REF=1
run v65 CM_REF=1 LD_LIBRARY_PATH="$V65"
run ours LD_LIBRARY_PATH="$OURS_DIR"

load_expected abi-tests/cm/expected-diffs.txt "$KERNEL"
for c in $("$BIN" --list); do
	ref=v44
	[[ $c == v14-* ]] && ref=v65
	if grep -q "SKIP: library lacks" "$tmp/ours/$c" 2>/dev/null; then
		echo "SKIP $c: our library lacks the RDMACM_1.4 functions"; skip=$((skip + 1)); continue
	fi
	compare_case "$c" "$tmp/$ref/$c" "$tmp/ours/$c" "vs $ref"
done

for l in v44 ours; do
	e=()
	[ $l = ours ] && e=(LD_LIBRARY_PATH="$OURS_DIR")
	if timeout 240 env "${e[@]}" "$BIN" --threads >"$tmp/threads-$l" 2>&1; then
		echo "ok   threads [$l]: $(tr '\n' ';' <"$tmp/threads-$l")"
		pass=$((pass + 1))
	else
		echo "FAIL threads [$l] (exit $?): $(tr '\n' ';' <"$tmp/threads-$l")"
		fail=$((fail + 1))
	fi
done
# Leaks and invalid accesses of ours in the threaded run (fewer cycles: valgrind
# under emulation is slow). Only our library's frames count as "definitely lost".
vlog=$tmp/threads-valgrind
if timeout 400 env LD_LIBRARY_PATH="$OURS_DIR" valgrind --leak-check=full --errors-for-leak-kinds=definite \
	--error-exitcode=3 --log-file="$vlog" "$BIN" --threads 10 >"$tmp/threads-vg.out" 2>&1; then
	echo "ok   threads under valgrind [ours]: $(tr '\n' ';' <"$tmp/threads-vg.out") $(grep -o 'definitely lost: [^,]*' "$vlog" | head -n1)"
	pass=$((pass + 1))
else
	echo "FAIL threads under valgrind [ours] (exit $?):"
	grep -E "definitely|ERROR SUMMARY|Invalid" "$vlog" | head -n 10
	fail=$((fail + 1))
fi
cp -r "$tmp" "${VM_OUT:-/tmp}/cm-diff-$KERNEL" 2>/dev/null
echo "$pass passed, $fail failed, $skip skipped"
((fail == 0))
