#!/usr/bin/env bash
# net-setup.sh [auto|single|pair] — (guest side; run.sh runs it before the
# command) the soft-RoCE network. The guest has no NIC; only 192.0.2.0/24 and
# fd00::/64 are used.
#   single  initial namespace: dummy d0 with 192.0.2.1/24 and fd00::1/64
#           (nodad), rxe0 on d0; client and server share rxe0.
#   pair    single, plus two "hosts": network namespaces a and b joined by a
#           veth pair, va 192.0.2.1/24 with rxe_a in a, vb 192.0.2.2/24 with
#           rxe_b in b. The command still runs in the initial namespace;
#           `ina CMD...` / `inb CMD...` (on PATH, in /run/rdmacm-bed/bin) run
#           CMD in a / b. Needs kernel >= 6.18 (6.1's rxe only works in the
#           initial namespace).
#   auto    pair where the kernel supports it, else single (the default).
# Writes the mode used to /run/rdmacm-net-mode. Checks that rxe came up
# (rdma link, /dev/infiniband/rdma_cm, ibv_devices); otherwise records the
# cause in $VM_OUT/bed-broken (run.sh prints it as "BED BROKEN: <cause>"; with
# no $VM_OUT it prints that line itself) and exits 1.
set -euo pipefail
mode=${1:-auto}
fail() {
	local why=$*
	local mods
	mods=$(cat "${VM_OUT:-/nonexistent}/insmod-failed" 2>/dev/null || true)
	[ -z "$mods" ] || why="$why (modules that failed to load:$mods)"
	# run.sh prints the cause from the share; without one, print it here.
	{ [ -n "${VM_OUT:-}" ] && echo "$why" >"$VM_OUT/bed-broken"; } 2>/dev/null || echo "BED BROKEN: $why"
	exit 1
}
new_kernel=0
[ "$(printf '%s\n' 6.18 "$(uname -r)" | sort -V | head -n1)" = 6.18 ] && new_kernel=1
case $mode in
auto) ((new_kernel)) && mode=pair || mode=single ;;
single) ;;
pair) ((new_kernel)) || fail "--net pair needs kernel >= 6.18 (this is $(uname -r))" ;;
*) fail "unknown network mode '$mode'" ;;
esac

# rxe comes up ACTIVE at once on an up netdev; allow a moment under TCG.
rxe_up() { # name [netns]
	local i
	for i in $(seq 1 50); do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.1
	done
	fail "rdma link $1/1 is not ACTIVE: $(rdma link show "$1/1" 2>&1 | head -n1)"
}

ip link set lo up
ip link add d0 type dummy || fail "cannot create the dummy netdev (dummy module missing?)"
ip addr add 192.0.2.1/24 dev d0
ip -6 addr add fd00::1/64 dev d0 nodad
ip link set d0 up
rdma link add rxe0 type rxe netdev d0 2>/dev/null || fail "rdma link add rxe0 failed (rdma_rxe not loaded?)"
rxe_up rxe0
[ -c /dev/infiniband/rdma_cm ] || fail "/dev/infiniband/rdma_cm missing (rdma_ucm not loaded?)"
ibv_devices 2>/dev/null | grep -qw rxe0 || fail "ibv_devices does not list rxe0 (rxe provider of libibverbs missing?)"

if [ "$mode" = pair ]; then
	ip netns add a && ip netns add b || fail "cannot create network namespaces a and b"
	ip link add va type veth peer name vb || fail "cannot create a veth pair (veth module missing?)"
	ip link set va netns a && ip link set vb netns b
	ip -n a link set lo up && ip -n b link set lo up
	ip -n a addr add 192.0.2.1/24 dev va && ip -n a link set va up
	ip -n b addr add 192.0.2.2/24 dev vb && ip -n b link set vb up
	ip netns exec a rdma link add rxe_a type rxe netdev va 2>/dev/null || fail "rxe on veth va in namespace a failed"
	ip netns exec b rdma link add rxe_b type rxe netdev vb 2>/dev/null || fail "rxe on veth vb in namespace b failed"
	rxe_up rxe_a
	rxe_up rxe_b
	mkdir -p /run/rdmacm-bed/bin
	for n in a b; do
		printf '#!/bin/sh\n# run a command in network namespace %s of the soft-RoCE bed\nexec ip netns exec %s "$@"\n' \
			"$n" "$n" >/run/rdmacm-bed/bin/in$n
		chmod +x /run/rdmacm-bed/bin/in$n
	done
fi
echo "$mode" >/run/rdmacm-net-mode
