#!/usr/bin/env bash
# demo-guest.sh — what `make demo` shows inside the guest.
set -uo pipefail
OURS=$PWD/build/librdmacm.so.1
side() { # title, then two commands' outputs next to each other
	echo
	echo "### $1"
	printf '%-58s | %s\n' "Debian's librdmacm 44" "rdmacm-rs (LD_PRELOAD)"
	printf '%.0s-' {1..120}; echo
	paste -d'|' <(bash -c "$2" 2>&1 | cut -c1-58 | awk '{ printf "%-58s\n", $0 }') \
		<(LD_PRELOAD=$OURS bash -c "$2" 2>&1 | cut -c1-60) | sed 's/|/ | /'
}
echo "### soft-RoCE in this guest"
rdma link | sed 's/^/  /'
echo
mkdir -p /tmp/ours && ln -sf "$(readlink -f "$OURS")" /tmp/ours/librdmacm.so.1
echo "### rping over rxe0, server and client on rdmacm-rs (LD_LIBRARY_PATH: Debian's library is not loaded)"
LD_LIBRARY_PATH=/tmp/ours rping -s -a 192.0.2.1 -C 3 >/dev/null 2>&1 &
sleep 2
LD_LIBRARY_PATH=/tmp/ours rping -c -a 192.0.2.1 -C 3 -v 2>&1 | sed 's/^/  /'
wait
echo "  (the client mapped: $(LD_LIBRARY_PATH=/tmp/ours ldd "$(command -v rping)" | awk '/librdmacm/ { print $3 }') -> $(readlink -f /tmp/ours/librdmacm.so.1))"
echo
echo "### ucmatose, 10 connections, on rdmacm-rs"
LD_LIBRARY_PATH=/tmp/ours ucmatose -c 10 >/tmp/ucmatose-server.log 2>&1 &
sleep 2
LD_LIBRARY_PATH=/tmp/ours ucmatose -c 10 -s 192.0.2.1 -b 192.0.2.1 2>&1 | sed 's/^/  /'
wait
echo
echo "### rsockets: rstream, server on rdmacm-rs, client on Debian's librdmacm 44 (upstream's wire protocol; -T v checks the data)"
LD_LIBRARY_PATH=/tmp/ours rstream -p 7472 -T v -S 10000 -C 100 >/tmp/rstream-server.log 2>&1 &
sleep 2
rstream -s 192.0.2.1 -p 7472 -T v -S 10000 -C 100 2>&1 | sed 's/^/  client: /'
wait
sed 's/^/  server: /' /tmp/rstream-server.log
side "rdma_getaddrinfo(\"192.0.2.1\", \"7471\", {RAI_PASSIVE, RDMA_PS_TCP})" \
	"build/abi-tests/gai_diff f-passive"
side "rdma_getaddrinfo(\"fe80::2:c903:f:1234\", \"7471\", {RAI_FAMILY|RAI_NUMERICHOST, AF_IB, RDMA_PS_IB})" \
	"build/abi-tests/gai_diff ib-active"
side "rdma_resolve_addr + rdma_resolve_route to 192.0.2.1 on an async id" \
	"build/abi-tests/cm_diff async-local"
side "RDMACM 1.4: rdma_write_cm_event (upstream v65 on the left)" \
	"LD_LIBRARY_PATH=$PWD/.cache/upstream/v65-rdmacm build/abi-tests/cm_diff v14-write-event"
echo
echo "### rdma-core's and perftest's programs on rdmacm-rs (LD_LIBRARY_PATH)"
source abi-tests/vm/programs.sh
prepare_symbols /tmp/ours/librdmacm.so.1
for spec in "${PAIRS[@]}"; do
	: >/tmp/pair.log
	r=$(run_pair "$spec" "libpath:/tmp/ours" /tmp/pair.log)
	printf '  %-20s %s\n' "${spec%%|*}" "$r"
	[ "$r" = passed ] || tail -n 8 /tmp/pair.log | sed 's/^/      /'
done
echo
echo "(make test runs all of this as differential tests on kernels 6.1 and $(uname -r))"
