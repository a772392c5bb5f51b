#!/usr/bin/env bash
# fakesysfs-run.sh CMD... — run CMD where librdmacm believes one RDMA device
# (rxe0) exists, without any RDMA on the machine: a fake sysfs under
# SYSFS_PATH and a placeholder /dev/infiniband/uverbs0 in a private mount
# namespace (nothing leaks to the host). See shared/reference/soft-roce-vm.md.
# With FAKESYSFS_NO_DEVICE=1 the fake sysfs has the ucma ABI but no device.
set -euo pipefail
dir=$(mktemp -d /tmp/rdmacm-fakesysfs.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/class/misc/rdma_cm" "$dir/class/infiniband_verbs"
echo 4 >"$dir/class/misc/rdma_cm/abi_version"
echo 6 >"$dir/class/infiniband_verbs/abi_version"
if [ "${FAKESYSFS_NO_DEVICE:-0}" != 1 ]; then
	mkdir -p "$dir/class/infiniband_verbs/uverbs0" "$dir/class/infiniband/rxe0"
	echo rxe0 >"$dir/class/infiniband_verbs/uverbs0/ibdev"
	echo 231:192 >"$dir/class/infiniband_verbs/uverbs0/dev"
	echo 2 >"$dir/class/infiniband_verbs/uverbs0/abi_version"
	echo "1: CA" >"$dir/class/infiniband/rxe0/node_type"
	echo 0002:c903:000f:1234 >"$dir/class/infiniband/rxe0/node_guid"
fi
export SYSFS_PATH=$dir
exec unshare -m bash -c 'mkdir -p /dev/infiniband && mount -t tmpfs none /dev/infiniband &&
	{ [ "${FAKESYSFS_NO_DEVICE:-0}" = 1 ] || touch /dev/infiniband/uverbs0; } && exec "$@"' fakesysfs "$@"
