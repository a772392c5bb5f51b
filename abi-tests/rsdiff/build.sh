#!/usr/bin/env bash
# build.sh — build the rsocket semantics differential test on the host into
# build/abi-tests/rs_diff, plus rs_extra and rs_dgram (our library's own
# checks) (the guest runs them from the shared, read-only host root;
# abi-tests/vm/tests.d/61-rsockets-diff.sh, 63-rsockets-extra.sh,
# 64-rsockets-dgram.sh, 60-rsockets-interop.sh). Against Debian's
# rdma/rsocket.h and library; run with another librdmacm through
# LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/rs_diff abi-tests/rsdiff/rs_diff.c abi-tests/common/harness.c \
	-lrdmacm -lpthread
# rs_extra: checks of our library alone (tests.d/63-rsockets-extra.sh)
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/rs_extra abi-tests/rsdiff/rs_extra.c -lrdmacm -libverbs -lpthread
# rs_dgram: datagram rsockets of our library (tests.d/64-rsockets-dgram.sh)
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/rs_dgram abi-tests/rsdiff/rs_dgram.c -lrdmacm -libverbs -lpthread
# rs_closefirst: connections the client closes first, one process per side
# (tests.d/60-rsockets-interop.sh, every pairing)
cc -O1 -g -Wall -Wextra -Werror -o build/abi-tests/rs_closefirst abi-tests/rsdiff/rs_closefirst.c -lrdmacm
# ah_spy: an ibv_create_ah interposer (tests.d/64-rsockets-dgram.sh)
cc -shared -fPIC -O1 -Wall -Wextra -Werror -o build/abi-tests/ah_spy.so abi-tests/rsdiff/ah_spy.c -ldl
