#!/usr/bin/env bash
# check-asan.sh — (host side; `make check-asan`) the library built with
# AddressSanitizer (build-asan.sh) through the VM suite's differential
# programs, thread test and program matrix, on the soft-RoCE guests
# (asan-guest.sh; VM_KERNELS="6.1 new" picks the boots). Logs and the
# sanitizer's reports land in build/asan/vm-<kernel>/.
# Ends with "N passed, M failed, K skipped" summed over the boots; exit 1 on
# any failure or a boot that gave no result.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
die() { echo "check-asan: $*"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
bash abi-tests/vm/setup.sh || die "bed setup failed"
bash abi-tests/upstream/build-v65.sh >/dev/null || die "cannot build upstream rdma-core v65"
for b in abi-tests/*/build.sh; do
	bash "$b" || die "$b failed"
done
bash abi-tests/asan/build-asan.sh 2> >(grep -v "the use of .t[a-z]*nam" >&2) || die "the ASan build failed"
P=0 F=0 K=0
for k in ${VM_KERNELS:-6.1 new}; do
	case $k in 6.1) net=single ;; new) net=pair ;; *) die "unknown kernel tag $k" ;; esac
	out=build/asan/vm-$k
	rm -rf "$out" && mkdir -p "$out"
	echo "=== kernel $k (AddressSanitizer)"
	start=$SECONDS
	bash abi-tests/vm/run.sh --kernel "$k" --net "$net" --timeout "${VM_TIMEOUT:-3000}" --out "$REPO/$out" \
		-- bash abi-tests/asan/asan-guest.sh 2>&1 | tee "$out/console.log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out/console.log" | tail -n1)
	if [ -z "$line" ]; then
		echo "=== kernel $k: no result (run.sh exit $rc, $((SECONDS - start)) s)"
		F=$((F + 1))
		continue
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	((rc != 0 && f == 0)) && f=1
	P=$((P + p)) F=$((F + f)) K=$((K + s))
	echo "=== kernel $k: exit $rc, $p passed, $f failed, $s skipped ($((SECONDS - start)) s)"
done
echo "$P passed, $F failed, $K skipped"
((F == 0))
