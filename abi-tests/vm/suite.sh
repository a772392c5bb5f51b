#!/usr/bin/env bash
# suite.sh — (guest side) the real-kernel suite, run by vm-test.sh in a fresh
# soft-RoCE guest:
#  1. bed self-check: rdma-core's programs with Debian's library; if they
#     fail, the bed is broken and the suite says so;
#  2. every tests.d/*.sh (differential tests of our library against the
#     upstream ones; exit 0 pass, 77 skip, else fail; a closing
#     "N passed, M failed[, K skipped]" line gives finer counts);
#  3. the compatibility matrix: each program with our library through
#     LD_PRELOAD and LD_LIBRARY_PATH, written to $VM_OUT/compat-$VM_KERNEL.md.
# Ends with one line "N passed, M failed, K skipped"; exit 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
OUT=${VM_OUT:-/tmp}
KERNEL=${VM_KERNEL:-$(uname -r)}
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
OURS_DIR=$(dirname "$OURS")
source abi-tests/vm/programs.sh
P=0 F=0 K=0
log=$OUT/programs-$KERNEL.log
: >"$log"

echo "== bed self-check (Debian's librdmacm) on $(uname -r) ($(cat /run/rdmacm-net-mode) network)"
bed_ok=1
for spec in "${PAIRS[@]}"; do
	name=${spec%%|*}
	r=$(run_pair "$spec" system "$log")
	printf '  %-22s %s\n' "$name" "$r"
	case $r in passed) P=$((P + 1)) ;; skipped*) K=$((K + 1)) ;; *) F=$((F + 1)); bed_ok=0 ;; esac
done
((bed_ok)) || echo "BED BROKEN: upstream programs fail with the upstream library (see $(basename "$log"))"

echo "== differential tests"
for t in abi-tests/vm/tests.d/*.sh; do
	[ -e "$t" ] || continue
	tl=$OUT/$(basename "$t" .sh)-$KERNEL.log
	bash "$t" >"$tl" 2>&1
	rc=$?
	line=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$tl" | tail -n1)
	if [ -n "$line" ]; then
		p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line")
		f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
		k=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+' || echo 0)
	else
		p=$((rc == 0)) f=$((rc != 0 && rc != 77)) k=$((rc == 77))
	fi
	((rc != 0 && rc != 77 && f == 0)) && f=1
	P=$((P + p)) F=$((F + f)) K=$((K + k))
	grep -E '^(FAIL|SKIP|ok|diff|[-+]|  )' "$tl" | grep -v '^ok' | head -n 40 | sed 's/^/    /'
	printf '  %-22s exit %d: %d passed, %d failed, %d skipped\n' "$(basename "$t")" "$rc" "$p" "$f" "$k"
done

echo "== compatibility matrix (rdmacm-rs: $OURS)"
matrix=$OUT/compat-$KERNEL.md
{
	echo "| program | LD_PRELOAD | LD_LIBRARY_PATH |"
	echo "|---|---|---|"
} >"$matrix"
for spec in "${PAIRS[@]}"; do
	name=${spec%%|*}
	r1=$(run_pair "$spec" "preload:$OURS" "$log")
	r2=$(run_pair "$spec" "libpath:$OURS_DIR" "$log")
	printf '  %-22s preload: %s; libpath: %s\n' "$name" "$r1" "$r2"
	echo "| $name | $r1 | $r2 |" >>"$matrix"
	for r in "$r1" "$r2"; do
		case $r in passed) P=$((P + 1)) ;; skipped*) K=$((K + 1)) ;; *) F=$((F + 1)) ;; esac
	done
done
echo "$P passed, $F failed, $K skipped"
((F == 0))
