#!/usr/bin/env bash
# check-asan.sh — (host side; `make check-asan`) the library built with
# AddressSanitizer (build-asan.sh) through the VM suite's differential
# programs, thread test and program matrix, on the soft-RoCE guests: the
# boots of abi-tests/vm/vm-test.sh (its bed setup, builds and
# VM_KERNELS="6.1 new") with asan-guest.sh as the guest's script. Logs and
# the sanitizer's reports land in build/asan/vm-<kernel>/.
# Ends with "N passed, M failed, K skipped" summed over the boots; exit 1 on
# any failure or a boot that gave no result.
set -uo pipefail
cd "$(dirname "$0")/../.."
bash abi-tests/asan/build-asan.sh 2> >(grep -v "the use of .t[a-z]*nam" >&2) ||
	{ echo "check-asan: the ASan build failed"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
VM_SUITE=abi-tests/asan/asan-guest.sh VM_OUTDIR=build/asan/vm VM_TIMEOUT=${VM_TIMEOUT:-3000} \
	exec bash abi-tests/vm/vm-test.sh
