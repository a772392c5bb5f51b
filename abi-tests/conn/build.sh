#!/usr/bin/env bash
# build.sh — build the connection-management differential test on the host
# into build/abi-tests/conn_diff (the guest runs it from the shared,
# read-only host root; abi-tests/vm/tests.d/30-conn-diff.sh).
# One binary from the case table (conn_diff.c), the cases by family
# (conn_*.c, listed in conn.h) and the shared case runner
# (abi-tests/common/harness.c).
# Against Debian's header and library (-lrdmacm -libverbs); the connection
# functions are looked up at run time (dlsym), so the binary loads on any
# librdmacm that has the RDMACM_1.0 core.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
SRC=(abi-tests/conn/conn_diff.c abi-tests/conn/conn_common.c abi-tests/conn/conn_rc.c abi-tests/conn/conn_qp.c
	abi-tests/conn/conn_ud.c abi-tests/conn/conn_ep.c abi-tests/conn/conn_mcast.c abi-tests/conn/conn_fault.c
	abi-tests/conn/conn_bad.c abi-tests/common/harness.c)
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/conn_diff "${SRC[@]}" -lrdmacm -libverbs -lpthread -ldl
