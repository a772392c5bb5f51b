#!/usr/bin/env bash
# vm-test.sh — `make vm-test`: the real-kernel suite. Prepares the bed
# (setup.sh), builds upstream v65 for the RDMACM_1.4 comparisons and the
# test programs on the host, then boots each kernel once (6.1; the newest
# trixie-backports kernel with the two-namespace network) and runs suite.sh
# inside. Writes build/compat-<kernel>.md and ends with one line
# "N passed, M failed, K skipped"; exit 1 on any failure or broken bed.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
bash abi-tests/vm/setup.sh || exit 1
bash abi-tests/upstream/build-v65.sh || exit 1
for b in abi-tests/*/build.sh; do
	[ -e "$b" ] && { bash "$b" || { echo "vm-test: $b failed"; exit 1; }; }
done
[ -e build/librdmacm.so.1 ] || { echo "vm-test: build/librdmacm.so.1 missing (run make)"; exit 1; }
P=0 F=0 K=0
for k in 6.1 new; do
	out=build/vm-$k
	rm -rf "$out" && mkdir -p "$out"
	echo "=== kernel $k: $(cat .cache/vm/k-$k/kver)"
	start=$SECONDS
	bash abi-tests/vm/run.sh --kernel "$k" --timeout 540 --out "$REPO/$out" -- bash abi-tests/vm/suite.sh |
		grep --line-buffered -v 'reboot: Power down' | tee "$out/console.log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out/console.log" | tail -n1)
	if [ -z "$line" ]; then
		echo "vm-test: kernel $k gave no result (exit $rc)"
		F=$((F + 1))
		continue
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	P=$((P + p)) F=$((F + f)) K=$((K + s))
	((rc != 0 && f == 0)) && F=$((F + 1))
	cp "$out/compat-$k.md" "build/compat-$k.md" 2>/dev/null
	echo "=== kernel $k: exit $rc, $p passed, $f failed, $s skipped ($((SECONDS - start)) s)"
done
echo "$P passed, $F failed, $K skipped"
((F == 0))
