#!/usr/bin/env bash
# build.sh — build the allocation-failure walk on the host into
# build/abi-tests/ (the guest runs them from the shared, read-only root):
#   failmalloc.so   the LD_PRELOAD shim (failmalloc.c)
#   slowlisten.so   LD_PRELOAD shim: a process's second rdma_listen starts
#                   late (tests.d/73-perftest-race.sh)
#   earlylisten.so  LD_PRELOAD shim: rdma_listen right after rdma_bind_addr
#                   (qperf's server in abi-tests/vm/clients.sh)
#   fault_walk      the scenarios and the walk (fault_walk.c), against
#                   Debian's headers, linked with -lrdmacm (LD_LIBRARY_PATH
#                   picks the library under test)
# Rebuilt only when a source is newer.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build/abi-tests
mkdir -p "$B"
F=abi-tests/fault
newer() { # OUT SRC...: 0 when OUT is missing or older than a source
	local o=$1 f
	shift
	[ -e "$o" ] || return 0
	for f in "$@"; do [ "$f" -nt "$o" ] && return 0; done
	return 1
}
if newer "$B/failmalloc.so" $F/failmalloc.c $F/fault.h; then
	cc -O2 -g -fPIC -shared -Wall -Wextra -Werror -o "$B/failmalloc.so.tmp" $F/failmalloc.c -ldl
	mv -f "$B/failmalloc.so.tmp" "$B/failmalloc.so"
fi
if newer "$B/fault_walk" $F/fault_walk.c $F/fault.h; then
	cc -O1 -g -Wall -Wextra -Werror -o "$B/fault_walk.tmp" $F/fault_walk.c -lrdmacm -libverbs -lpthread -ldl
	mv -f "$B/fault_walk.tmp" "$B/fault_walk"
fi
if newer "$B/server_faults" $F/server_faults.c; then
	cc -O1 -g -Wall -Wextra -Werror -o "$B/server_faults.tmp" $F/server_faults.c -lrdmacm -libverbs -lpthread
	mv -f "$B/server_faults.tmp" "$B/server_faults"
fi
if newer "$B/slowlisten.so" $F/slowlisten.c; then
	cc -O1 -g -fPIC -shared -Wall -Wextra -Werror -o "$B/slowlisten.so.tmp" $F/slowlisten.c -ldl
	mv -f "$B/slowlisten.so.tmp" "$B/slowlisten.so"
fi
if newer "$B/earlylisten.so" $F/earlylisten.c; then
	cc -O1 -g -fPIC -shared -Wall -Wextra -Werror -o "$B/earlylisten.so.tmp" $F/earlylisten.c -ldl
	mv -f "$B/earlylisten.so.tmp" "$B/earlylisten.so"
fi
