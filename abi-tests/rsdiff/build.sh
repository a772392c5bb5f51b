#!/usr/bin/env bash
# build.sh — build the rsocket semantics differential test on the host into
# build/abi-tests/rs_diff, and rs_extra (our library's own checks) (the guest runs it from the shared, read-only host
# root; abi-tests/vm/tests.d/61-rsockets-diff.sh). Against Debian's
# rdma/rsocket.h and library; run with another librdmacm through
# LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/rs_diff abi-tests/rsdiff/rs_diff.c abi-tests/common/harness.c \
	-lrdmacm -lpthread
# rs_extra: checks of our library alone (tests.d/63-rsockets-extra.sh)
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/rs_extra abi-tests/rsdiff/rs_extra.c -lrdmacm -libverbs -lpthread
