#!/usr/bin/env bash
# net-setup.sh — inside the guest: soft-RoCE devices for the tests.
#  - always: dummy d0 with 192.0.2.1/24 and fd00::1/64, rxe0 on it;
#  - kernels >= 6.18 (where rxe works in network namespaces): namespaces
#    a and b joined by a veth pair, 192.0.2.1 on rxe_a in a, 192.0.2.2 on
#    rxe_b in b (`ip netns exec a|b CMD`).
# Fails with one line naming what did not come up.
set -uo pipefail
fail() { echo "BED BROKEN: $*"; exit 1; }
ip link set lo up
ip link add d0 type dummy || fail "cannot create dummy device"
ip addr add 192.0.2.1/24 dev d0
ip -6 addr add fd00::1/64 dev d0 nodad
ip link set d0 up
rdma link add rxe0 type rxe netdev d0 || fail "rdma link add rxe0 failed (rdma_rxe missing?)"
[ -c /dev/infiniband/rdma_cm ] || fail "/dev/infiniband/rdma_cm missing (rdma_ucm not loaded?)"
ibv_devices 2>/dev/null | grep -q rxe0 || fail "libibverbs does not list rxe0"
if [ "$(printf '%s\n' 6.18 "$(uname -r)" | sort -V | head -n1)" = 6.18 ]; then
	ip netns add a && ip netns add b || fail "cannot create network namespaces"
	ip link add va type veth peer name vb || fail "cannot create veth pair"
	ip link set va netns a && ip link set vb netns b
	ip -n a addr add 192.0.2.1/24 dev va && ip -n a link set va up && ip -n a link set lo up
	ip -n b addr add 192.0.2.2/24 dev vb && ip -n b link set vb up && ip -n b link set lo up
	ip netns exec a rdma link add rxe_a type rxe netdev va || fail "rxe on veth in namespace a failed"
	ip netns exec b rdma link add rxe_b type rxe netdev vb || fail "rxe on veth in namespace b failed"
	echo pair >/run/rdmacm-net-mode
else
	echo single >/run/rdmacm-net-mode
fi
exit 0
