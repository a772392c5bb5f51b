#!/usr/bin/env bash
# leak.sh — our library under valgrind (memcheck), in a fake sysfs:
#  1. rdma_getaddrinfo/rdma_freeaddrinfo pairs (LEAK_PAIRS, default 100 000;
#     gai_diff --leak: numeric active/passive, no hints, AF_IB active and
#     passive, /etc/hosts + service name, hints-only, source hints, an EAI
#     error): no byte definitely or indirectly lost, no invalid access;
#  2. the whole gai_diff corpus once: no invalid access, no leak.
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${LEAK_PAIRS:-100000}
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
B=build/abi-tests
bash abi-tests/gai/build.sh || { echo "cannot build gai_diff"; echo "0 passed, 1 failed"; exit 1; }
[ -e "$OURS" ] || { echo "no library at $OURS (run make)"; echo "0 passed, 1 failed"; exit 1; }
pass=0 fail=0
# memcheck LOG ARGS...: gai_diff ARGS under valgrind; one verdict.
memcheck() {
	local log=$B/$1; shift
	bash abi-tests/gai/fakesysfs.sh env LD_LIBRARY_PATH="$(dirname "$OURS")" valgrind --leak-check=full \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=3 --child-silent-after-fork=yes \
		--log-file="$PWD/$log" "$B/gai_diff" "$@" >"$log.out"
	local rc=$?
	echo "gai_diff ${*:-(whole corpus)}:"
	tail -n1 "$log.out" | sed 's/^/  /'
	grep -E "definitely lost|indirectly lost|ERROR SUMMARY" "$log" | sed 's/^==[0-9]*== */  /'
	if ((rc == 0)) && grep -q "ERROR SUMMARY: 0 errors" "$log"; then
		pass=$((pass + 1))
	else
		echo "FAIL: valgrind found problems (exit $rc), see $log"
		fail=$((fail + 1))
	fi
}
memcheck leak.valgrind --leak "$N"
memcheck corpus.valgrind
echo "$pass passed, $fail failed"
((fail == 0))
