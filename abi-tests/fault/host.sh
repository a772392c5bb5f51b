#!/usr/bin/env bash
# host.sh — the allocation-failure walk on the host (no RDMA needed; `make
# test` step fault-host). The guest part, with ids, connections, multicast
# and rsockets, is abi-tests/vm/tests.d/70-fault.sh.
#
#  1. fault_walk --self-test: the shim counts and fails what it should
#     (strdup and fopen count through malloc, the k-th allocation fails with
#     ENOMEM and only it, posix_memalign reports without touching errno).
#  2. The address-translation walk (scenario gai: rdma_getaddrinfo and
#     rdma_freeaddrinfo, active and passive, numeric and names, IPv4 and
#     IPv6, source hint, AF_IB) in the fake sysfs of
#     abi-tests/gai/fakesysfs.sh, with our library and with Debian's (v44,
#     the reference figure, printed, not judged). Ours must survive every
#     point (0 aborts, 0 hangs) and stay usable after each (0 unusable
#     after), and the walk must have found points at all.
#  3. The control, printed, not judged: glibc's getaddrinfo alone with its
#     own allocations failing (FAULT_IN_GETADDRINFO=1) — why the shim
#     leaves allocations inside getaddrinfo alone by default (failmalloc.c).
# The walks' full output goes to build/fault/host-*.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=build/abi-tests
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
bash abi-tests/fault/build.sh || { echo "cannot build the fault walk"; echo "0 passed, 1 failed"; exit 1; }
[ -e "$OURS" ] || { echo "no library at $OURS (run make)"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p build/fault
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
SHIM=$PWD/$B/failmalloc.so

out=$(LD_PRELOAD=$SHIM "$B/fault_walk" --self-test 2>&1)
echo "$out" | sed 's/^/  /'
line=$(tail -n1 <<<"$out")
if [[ $line =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && ((BASH_REMATCH[1] > 0)); then
	ok "the shim's self-test"
else
	bad "the shim's self-test"
fi

# walk LABEL LIBDIR(empty: Debian's) SCENARIO [ENV...]
walk() {
	local label=$1 dir=$2 s=$3
	shift 3
	local env=("$@") f=build/fault/host-$s-$label.txt
	[ -n "$dir" ] && env+=(LD_LIBRARY_PATH="$dir")
	bash abi-tests/gai/fakesysfs.sh env "${env[@]}" LD_PRELOAD="$SHIM" "$B/fault_walk" --label "$label" \
		--timeout 10 "$s" >"$f" 2>/dev/null
	summary=$(tail -n1 "$f")
	echo "  $summary"
}
walk ours "$(dirname "$OURS")" gai
if grep -q "^# library: $(readlink -f "$OURS")\$\|^# library: $(dirname "$OURS")/librdmacm.so.1\$" build/fault/host-gai-ours.txt &&
	[[ $summary =~ ^gai\ ours:\ ([0-9]+)\ points.*\ ([0-9]+)\ aborts,\ ([0-9]+)\ hangs,\ ([0-9]+)\ unusable\ after ]]; then
	if ((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] == 0 && BASH_REMATCH[3] == 0 && BASH_REMATCH[4] == 0)); then
		ok "gai: our library survives every allocation failure and stays usable"
	else
		bad "gai: our library (see build/fault/host-gai-ours.txt)"
		grep -E '^  k=' build/fault/host-gai-ours.txt | head -n 20
	fi
else
	bad "gai: the walk did not run our library (see build/fault/host-gai-ours.txt)"
fi
walk v44 "" gai
echo "  (Debian's v44 is the reference figure, not judged)"
walk glibc "" libc-gai FAULT_IN_GETADDRINFO=1
echo "  (the control: glibc's own getaddrinfo with its allocations failing, not judged)"
echo "$pass passed, $fail failed"
((fail == 0))
