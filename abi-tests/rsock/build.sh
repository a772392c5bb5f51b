#!/usr/bin/env bash
# build.sh — build the hostile-peer rsocket test on the host into
# build/abi-tests/hostile (the guest runs it from the shared, read-only host
# root; abi-tests/vm/tests.d/62-rsockets-hostile.sh).
# One binary, two roles: `hostile victim` is a plain rsocket server (run with
# our library through LD_LIBRARY_PATH); `hostile attack` is a raw peer that
# speaks the rsocket wire protocol itself with the rdma_cm API and libibverbs
# (run with Debian's librdmacm) and breaks it in one way per case.
# Against Debian's headers and library (-lrdmacm -libverbs).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/hostile abi-tests/rsock/hostile.c -lrdmacm -libverbs -lpthread
