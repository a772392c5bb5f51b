#!/usr/bin/env bash
# build.sh — build build/abi-tests/gai_diff on the host (the VM runs it from
# the shared, read-only root), against Debian's <rdma/rdma_cma.h> and
# librdmacm; rebuilt only when gai_diff.c is newer.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/abi-tests/gai_diff
mkdir -p build/abi-tests
if [ ! -x "$out" ] || [ abi-tests/gai/gai_diff.c -nt "$out" ]; then
	cc -std=c99 -O1 -g -Wall -Wextra -o "$out.tmp" abi-tests/gai/gai_diff.c -lrdmacm
	mv -f "$out.tmp" "$out"
fi
