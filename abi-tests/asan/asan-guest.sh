#!/usr/bin/env bash
# asan-guest.sh — (guest side of `make check-asan`) the library built with
# AddressSanitizer (build/asan/lib, see build-asan.sh) through the VM
# suite's differential programs, its thread test and the program matrix,
# every process with gcc's ASan runtime preloaded (LD_PRELOAD), leak
# detection on, one sanitizer log per process in $VM_OUT/asan-logs-$KERNEL.
#
#  1. canaries: build/asan/canary must be stopped with a heap-buffer-overflow
#     report (the toolchain's checks work in our kind of build), and
#     build/asan/leaky must be reported leaking through our library (leaks
#     are caught and attributed).
#  2. tests.d/20-cm-diff.sh (cm_diff, cm_threads, cm_threads -x),
#     30-conn-diff.sh (conn_diff), 61-rsockets-diff.sh (the rsockets case
#     programs), with RDMACM_UNDER_TEST = the ASan build: their own checks
#     must pass as in `make test`.
#  3. the program matrix (programs.sh) with the ASan build (LD_LIBRARY_PATH)
#     and, for comparison, with Debian's library (same runtime preloaded).
#  4. reports.py reads the logs: every AddressSanitizer error whose stack
#     passes through our library fails; so does any leak allocated through
#     our library in a program that leaks nothing through Debian's library
#     in the same run (a program that never frees what it asked for leaks
#     with both: listed, not counted).
# Ends with "N passed, M failed, K skipped"; exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
KERNEL=${VM_KERNEL:-unknown}
OUT=${VM_OUT:-/tmp}
ASAN_LIB=$REPO/build/asan/lib/librdmacm.so.1
RT=/usr/lib/x86_64-linux-gnu/libasan.so.8
P=0 F=0 K=0
ok() { echo "ok   $*"; P=$((P + 1)); }
bad() { echo "FAIL $*"; F=$((F + 1)); }
[ -e "$ASAN_LIB" ] || { bad "no $ASAN_LIB (abi-tests/asan/build-asan.sh)"; echo "$P passed, $F failed, $K skipped"; exit 1; }
[ -e "$RT" ] || { bad "no ASan runtime $RT"; echo "$P passed, $F failed, $K skipped"; exit 1; }
LOGS=$OUT/asan-logs-$KERNEL
rm -rf "$LOGS" && mkdir -p "$LOGS"
# The runtime for every process from here on. Leaks are reported in the
# logs and must not change an exit status (the programs' and tools' own
# leaks would fail the tests); the sanitizers share one exit-code setting,
# so an ASan error also stops its process with status 0: what judges the
# run is step 4, which reads every error report in the logs.
asan_env() { # log-prefix
	export LD_PRELOAD=$RT
	export ASAN_OPTIONS="log_path=$LOGS/$1:log_exe_name=1:detect_leaks=1:verify_asan_link_order=0:allocator_may_return_null=1"
	export LSAN_OPTIONS="exitcode=0"
}
no_asan() { unset LD_PRELOAD ASAN_OPTIONS LSAN_OPTIONS; }

echo "== canaries"
(asan_env canary && build/asan/canary) >"$OUT/asan-canary.out" 2>&1
rc=$?
if grep -qs 'heap-buffer-overflow' "$LOGS"/canary.* && ! grep -q 'past the end' "$OUT/asan-canary.out"; then
	ok "canary: the overflow was reported and stopped the process"
else
	bad "canary: no heap-buffer-overflow report (exit $rc): $(tr '\n' ';' <"$OUT/asan-canary.out")"
fi
(asan_env leaky && LD_LIBRARY_PATH=$REPO/build/asan/lib build/asan/leaky) >"$OUT/asan-leaky.out" 2>&1
rc=$?
if ((rc == 0)) && grep -qs 'build/asan/lib/librdmacm' "$LOGS"/leaky.*; then
	ok "leak canary: rdma_getaddrinfo's unfreed result was reported through our library"
else
	bad "leak canary (exit $rc): $(tr '\n' ';' <"$OUT/asan-leaky.out"); logs: $(cat "$LOGS"/leaky.* 2>/dev/null | head -n 20 | tr '\n' ';')"
fi

echo "== tests.d under AddressSanitizer"
for t in 20-cm-diff 30-conn-diff 61-rsockets-diff; do
	t0=$SECONDS
	(asan_env "$t" && RDMACM_ASAN=1 RDMACM_UNDER_TEST=$ASAN_LIB timeout -k 5 900 bash "abi-tests/vm/tests.d/$t.sh") \
		>"$OUT/asan-$t.log" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$OUT/asan-$t.log" | tail -n1)
	if ((rc == 0)); then
		ok "$t: $line ($((SECONDS - t0)) s)"
	else
		bad "$t: exit $rc, ${line:-no summary} ($((SECONDS - t0)) s)"
		grep -E '^(FAIL|TIMEOUT)' "$OUT/asan-$t.log" | head -n 20 | sed 's/^/    /'
	fi
done

echo "== program matrix under AddressSanitizer"
source abi-tests/vm/programs.sh
PAIR_TIMEOUT=${PAIR_TIMEOUT:-90}
mkdir -p "$OUT/asan-lib" && ln -sf "$ASAN_LIB" "$OUT/asan-lib/librdmacm.so.1"
prepare_symbols "$ASAN_LIB" "$SYSTEM_RDMACM"
for spec in "${PAIRS[@]}"; do
	name=${spec%%|*}
	tag=${name//[^A-Za-z0-9_]/_}
	for mode in "libpath:$OUT/asan-lib" system; do
		lbl=ours
		[ "$mode" = system ] && lbl=debian
		r=$(asan_env "matrix-$tag-$lbl" && run_pair "$spec" "$mode" "$OUT/asan-programs.log")
		case $r in
		passed) ok "$name [$lbl]" ;;
		skipped*) echo "SKIP $name [$lbl]: $r"; K=$((K + 1)) ;;
		*) [ $lbl = ours ] && bad "$name [$lbl]: $r" || { echo "SKIP $name [$lbl]: $r (Debian's run is only the leak comparison)"; K=$((K + 1)); } ;;
		esac
	done
done

echo "== sanitizer reports"
no_asan
python3 abi-tests/asan/reports.py "$LOGS" build/asan/lib/librdmacm >"$OUT/asan-reports.txt" 2>&1
rc=$?
cat "$OUT/asan-reports.txt"
read -r _ p f < <(grep '^counts ' "$OUT/asan-reports.txt" || echo "counts 0 1")
P=$((P + p)) F=$((F + f))
((rc == 0)) || ((f > 0)) || bad "reports.py failed (exit $rc)"
echo "$P passed, $F failed, $K skipped"
((F == 0))
