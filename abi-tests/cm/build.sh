#!/usr/bin/env bash
# build.sh — build the CM differential test program on the host (the VM
# runs it from the shared root). Against Debian's header; the RDMACM_1.4
# functions are looked up at run time.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/abi-tests
cc -O1 -g -Wall -Wextra -o build/abi-tests/cm_diff abi-tests/cm/cm_diff.c -lrdmacm -libverbs -lpthread -ldl
