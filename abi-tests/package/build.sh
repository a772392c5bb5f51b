#!/usr/bin/env bash
# build.sh — (host; vm-test.sh runs every abi-tests/*/build.sh before
# booting) the packages tests.d/80-package.sh installs in the guest:
# build/deb/*.deb from `make deb` and Debian's 44.0-2 in .cache/debs.
# `make test` has made them already (abi-tests/package/check.sh); this
# makes them for `make vm-test` alone, when they are missing or older than
# the library. A failure is left for the guest test to report (it fails
# with "packages not built"): the rest of the VM suite still runs.
cd "$(dirname "$0")/../.."
mkdir -p build/logs
lib=$(ls build/deb/librdmacm1_*_amd64.deb 2>/dev/null | head -n1)
if [ -z "$lib" ] || [ build/librdmacm.so.1 -nt "$lib" ] || ! ls .cache/debs/librdmacm1_44.0-2_amd64.deb >/dev/null 2>&1; then
	bash abi-tests/package/check.sh >build/logs/package-check.log 2>&1 ||
		echo "abi-tests/package/build.sh: the package check failed (build/logs/package-check.log)"
fi
exit 0
