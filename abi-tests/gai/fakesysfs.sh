#!/usr/bin/env bash
# fakesysfs.sh [--no-device] CMD... — run CMD where librdmacm believes one
# RDMA device (rxe0) exists, on a machine without any RDMA (reference
# soft-roce-vm.md, "Without any VM"). The fake sysfs, in a temp dir:
#   class/infiniband_verbs/abi_version                      6
#   class/infiniband_verbs/uverbs0/{ibdev,dev,abi_version}  rxe0, 231:192, 2
#   class/infiniband/rxe0/{node_type,node_guid}             "1: CA", a GUID
#   class/misc/rdma_cm/abi_version                          4
# CMD runs with SYSFS_PATH set to it, under `unshare -m`, with a tmpfs on
# /dev/infiniband holding a placeholder uverbs0 (libibverbs only stat()s it).
# Nothing more is needed (checked with strace, Debian 44): this kernel
# refuses NETLINK_RDMA, so libibverbs falls back to sysfs; device/modalias
# is absent, so the rxe provider matches by the ibdev name "rxe*"; nothing
# opens the device for rdma_getaddrinfo; /dev/infiniband/rdma_cm is absent,
# so ucma_init's AF_IB probe fails quietly (af_ib_support = 0, no ibacm).
#   --no-device   the ABI files but no device: libraries answer -1/ENODEV.
# Nothing is left behind: the temp dir is removed, and so is the mount
# point /dev/infiniband if this script had to create it (a mount namespace
# cannot hide a new directory on the host's /dev). CMD's exit status is
# returned.
set -uo pipefail
nodev=0
if [ "${1:-}" = --no-device ]; then
	nodev=1
	shift
fi
[ $# -gt 0 ] || { echo "usage: $0 [--no-device] CMD..." >&2; exit 2; }
created=0
[ -e /dev/infiniband ] || created=1
dir=$(mktemp -d /tmp/gai-fakesysfs.XXXXXX) || exit 1
cleanup() {
	rm -rf "$dir"
	if ((created)); then rmdir /dev/infiniband 2>/dev/null; fi
}
trap cleanup EXIT

mkdir -p "$dir/class/misc/rdma_cm" "$dir/class/infiniband_verbs"
echo 4 >"$dir/class/misc/rdma_cm/abi_version"
echo 6 >"$dir/class/infiniband_verbs/abi_version"
if ((!nodev)); then
	mkdir -p "$dir/class/infiniband_verbs/uverbs0" "$dir/class/infiniband/rxe0"
	echo rxe0 >"$dir/class/infiniband_verbs/uverbs0/ibdev"
	echo 231:192 >"$dir/class/infiniband_verbs/uverbs0/dev"
	echo 2 >"$dir/class/infiniband_verbs/uverbs0/abi_version"
	echo "1: CA" >"$dir/class/infiniband/rxe0/node_type"
	echo 0002:c903:000f:1234 >"$dir/class/infiniband/rxe0/node_guid"
fi
SYSFS_PATH=$dir FAKE_NODEV=$nodev unshare -m --propagation private bash -c '
	mkdir -p /dev/infiniband && mount -t tmpfs -o size=64k,mode=755 none /dev/infiniband || exit 125
	((FAKE_NODEV)) || : >/dev/infiniband/uverbs0
	unset FAKE_NODEV
	exec "$@"' fakesysfs "$@"
