#!/usr/bin/env bash
# build.sh — build the CM core test programs on the host into build/abi-tests/
# (the guest runs them from the shared, read-only host root):
#   cm_diff     the differential cases (abi-tests/vm/tests.d/20-cm-diff.sh),
#               with the shared case runner abi-tests/common/harness.c
#   cm_threads  the thread test
#   providers   provider libraries mapped after a first bind (25-providers.sh)
# Against Debian's header and library (-lrdmacm); the RDMACM_1.4 functions
# are looked up at run time (dlsym), so the binaries load on any librdmacm.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
CFLAGS=(-O1 -g -Wall -Wextra -Werror)
cc "${CFLAGS[@]}" -o build/abi-tests/cm_diff abi-tests/cm/cm_diff.c abi-tests/common/harness.c -lrdmacm -libverbs -ldl
cc "${CFLAGS[@]}" -o build/abi-tests/cm_threads abi-tests/cm/cm_threads.c -lrdmacm -libverbs -lpthread -ldl
cc "${CFLAGS[@]}" -o build/abi-tests/providers abi-tests/cm/providers.c -lrdmacm -libverbs
