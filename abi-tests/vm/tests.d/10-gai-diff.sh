#!/usr/bin/env bash
# rdma_getaddrinfo corpus against Debian's v44 and upstream v65 on the
# guest's real soft-RoCE device (no fake sysfs).
exec bash abi-tests/gai/run-diff.sh --native
