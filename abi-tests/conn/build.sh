#!/usr/bin/env bash
# build.sh — build the connection-management differential test on the host
# into build/abi-tests/conn_diff (the guest runs it from the shared,
# read-only host root; abi-tests/vm/tests.d/30-conn-diff.sh).
# Against Debian's header and library (-lrdmacm -libverbs); the connection
# functions are looked up at run time (dlsym), so the binary loads on any
# librdmacm that has the RDMACM_1.0 core.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/conn_diff abi-tests/conn/conn_diff.c -lrdmacm -libverbs -lpthread -ldl
