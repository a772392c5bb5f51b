#!/usr/bin/env bash
# build.sh — build build/abi-tests/gai_diff on the host (the VM runs it from
# the shared, read-only root), against Debian's <rdma/rdma_cma.h> and
# librdmacm, with the shared helpers of abi-tests/common/harness.c; rebuilt
# only when one of its sources is newer.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/abi-tests/gai_diff
src=(abi-tests/gai/gai_diff.c abi-tests/common/harness.c)
mkdir -p build/abi-tests
stale=0
[ -x "$out" ] || stale=1
for f in "${src[@]}" abi-tests/common/harness.h; do
	if [ "$f" -nt "$out" ]; then stale=1; fi
done
if ((stale)); then
	cc -std=c99 -O1 -g -Wall -Wextra -o "$out.tmp" "${src[@]}" -lrdmacm
	mv -f "$out.tmp" "$out"
fi
