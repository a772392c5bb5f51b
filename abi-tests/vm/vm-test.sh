#!/usr/bin/env bash
# vm-test.sh — (host side; `make vm-test`) the real-kernel suite, two boots:
#   kernel 6.1  single network (rxe0 only: 6.1's rxe does not work in
#               network namespaces);
#   kernel new  pair network (rxe0 plus namespaces a/b; mckey runs across
#               them), everything else as on 6.1.
# Before booting: setup.sh (bed), build-v65.sh (upstream reference library
# for the tests.d scripts), build-pyverbs.sh (v65's pyverbs, for rdma-core's
# own tests in tests.d/40-pyverbs.sh), every abi-tests/*/build.sh (test
# programs).
# Each boot runs suite.sh (bed self-check, tests.d, compatibility matrix);
# console and logs land in build/vm-<kernel>/, the matrix in
# build/compat-<kernel>.md, the rsocket programs' tables in
# build/rsockets-<kernel>.md and build/rsockets-dgram-<kernel>.md, the
# preload's tables in build/preload-<kernel>.md and
# build/preload-fork-<kernel>.md. The library under test is build/librdmacm.so.1
# or $RDMACM_UNDER_TEST. VM_KERNELS="6.1 new" picks the boots; VM_SUITE
# names another guest script in place of suite.sh and VM_OUTDIR another
# prefix for the output directories (`make check-asan` uses both).
# Ends with one line "N passed, M failed, K skipped" summed over both boots;
# exit 1 on any failure, a broken bed or a boot that gave no result.
# --prepare does only the work before booting, --boot only the boots
# (run-tests.sh runs the host steps beside the boots); with --boot,
# $VM_WAIT_FILE, when set, must exist before any boot but the first (the
# newer kernel's clients test runs what the host step clients-src built;
# the wait gives up after $VM_WAIT_MAX seconds, 3600 by default).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
die() { echo "vm-test: $*"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
mode=${1:-all}
case $mode in all | --prepare | --boot) ;; *) die "usage: vm-test.sh [--prepare | --boot]" ;; esac
if [ "$mode" != --boot ]; then
	bash abi-tests/vm/setup.sh || die "bed setup failed"
	bash abi-tests/upstream/build-v65.sh >/dev/null || die "cannot build upstream rdma-core v65"
	bash abi-tests/upstream/build-pyverbs.sh >/dev/null || die "cannot build pyverbs for upstream rdma-core v65"
	for b in abi-tests/*/build.sh; do
		[ -e "$b" ] || continue
		bash "$b" || die "$b failed"
	done
	[ "$mode" = --prepare ] && exit 0
fi
ours=${RDMACM_UNDER_TEST:-build/librdmacm.so.1}
[ -e "$ours" ] || echo "vm-test: note: $ours does not exist (run make): its matrix cells will be skipped"
export RDMACM_UNDER_TEST=$ours

P=0 F=0 K=0 vm_time=0 boots=0
for k in ${VM_KERNELS:-6.1 new}; do
	case $k in 6.1) net=single ;; new) net=pair ;; *) die "unknown kernel tag $k" ;; esac
	if ((boots++)) && [ -n "${VM_WAIT_FILE:-}" ] && [ ! -e "$VM_WAIT_FILE" ]; then
		echo "=== waiting for the host steps before the next boot"
		w=$SECONDS
		while [ ! -e "$VM_WAIT_FILE" ] && ((SECONDS - w < ${VM_WAIT_MAX:-3600})); do sleep 5; done
		echo "=== waited $((SECONDS - w)) s$([ -e "$VM_WAIT_FILE" ] || echo " (gave up: $VM_WAIT_FILE never appeared)")"
	fi
	out=${VM_OUTDIR:-build/vm}-$k
	rm -rf "$out" && mkdir -p "$out"
	echo "=== kernel $k: $(cat "${VM_CACHE:-.cache/vm}/k-$k/kver"), $net network"
	start=$SECONDS
	bash abi-tests/vm/run.sh --kernel "$k" --net "$net" --timeout "${VM_TIMEOUT:-2300}" --out "$REPO/$out" \
		-- bash "${VM_SUITE:-abi-tests/vm/suite.sh}" 2>&1 | tee "$out/console.log"
	rc=${PIPESTATUS[0]}
	secs=$((SECONDS - start))
	vm_time=$((vm_time + secs))
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out/console.log" | tail -n1)
	if [ -z "$line" ]; then
		echo "=== kernel $k: no result (run.sh exit $rc, $secs s)"
		F=$((F + 1))
		continue
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	((rc != 0 && f == 0)) && f=1
	P=$((P + p)) F=$((F + f)) K=$((K + s))
	cp "$out/compat-$k.md" "build/compat-$k.md" 2>/dev/null
	cp "$out/rsockets-$k.md" "build/rsockets-$k.md" 2>/dev/null
	cp "$out/rsockets-dgram-$k.md" "build/rsockets-dgram-$k.md" 2>/dev/null
	cp "$out/preload-$k.md" "build/preload-$k.md" 2>/dev/null
	cp "$out/preload-fork-$k.md" "build/preload-fork-$k.md" 2>/dev/null
	cp "$out/clients-$k.md" "build/clients-$k.md" 2>/dev/null
	echo "=== kernel $k: exit $rc, $p passed, $f failed, $s skipped ($secs s)"
done
echo "=== VM time: $vm_time s"
echo "$P passed, $F failed, $K skipped"
((F == 0))
