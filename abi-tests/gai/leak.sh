#!/usr/bin/env bash
# leak.sh — 100 000 rdma_getaddrinfo/rdma_freeaddrinfo pairs (numeric,
# passive, AF_IB, /etc/hosts + service name, hints-only, source hint, IPv6)
# with our library under valgrind, in a fake sysfs: 0 bytes definitely or
# indirectly lost, no invalid accesses.
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${LEAK_PAIRS:-100000}
B=build/abi-tests
[ -x "$B/gai_diff" ] || cc -O1 -Wno-missing-field-initializers -o "$B/gai_diff" abi-tests/gai/gai_diff.c -lrdmacm
log=$B/leak.valgrind
abi-tests/fakesysfs-run.sh env LD_LIBRARY_PATH="$PWD/build" valgrind --leak-check=full \
	--errors-for-leak-kinds=definite,indirect --error-exitcode=3 --log-file="$log" \
	"$B/gai_diff" --leak "$N"
rc=$?
grep -E "definitely lost|indirectly lost|ERROR SUMMARY" "$log" | sed 's/^==[0-9]*== */  /'
if ((rc == 0)) && grep -q "ERROR SUMMARY: 0 errors" "$log"; then
	echo "1 passed, 0 failed"
else
	echo "valgrind found problems (exit $rc), see $log"
	echo "0 passed, 1 failed"
	exit 1
fi
