#!/usr/bin/env bash
# demo.sh — `make demo`: set everything up, boot the soft-RoCE guest
# (newest kernel) and show rdma-core's tools and rdmacm-rs side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash abi-tests/vm/setup.sh
bash abi-tests/upstream/build-v65.sh >/dev/null
bash abi-tests/cm/build.sh
mkdir -p build/abi-tests
cc -O1 -Wno-missing-field-initializers -o build/abi-tests/gai_diff abi-tests/gai/gai_diff.c abi-tests/common/harness.c -lrdmacm
echo "Booting a Debian $(cat .cache/vm/k-new/kver) guest with soft-RoCE under qemu (about 10 s)..."
bash abi-tests/vm/run.sh --kernel new --timeout 300 -- bash abi-tests/vm/demo-guest.sh | grep -v 'reboot: Power down'
