#!/usr/bin/env bash
# build-pyverbs.sh — (host side) pyverbs, rdma-core's Python bindings, for
# the upstream v65 tree that build-v65.sh unpacks into .cache/upstream, so
# that rdma-core's own tests/test_rdmacm.py can run in the soft-RoCE guest
# (abi-tests/vm/tests.d/40-pyverbs.sh). Never committed: everything lands in
# .cache (gitignored).
#
# Runs build-v65.sh first (idempotent), installs cython3 and python3-dev with
# apt when missing, and builds in a build directory of its own next to the
# reference build (<tree>/build-pyverbs; the reference tree's build/ is not
# touched). Only the 42 Python extension modules and what they link are
# built, unoptimised (-O0, no debug info: the modules only have to work, and
# the libraries this builds are not used at run time: pyverbs runs on the
# reference build's libraries through LD_LIBRARY_PATH). About 30 s on
# 2 cores; a second run is a no-op check. The interpreter is Debian's
# /usr/bin/python3 (the guest's python3), whatever python3 is first on PATH.
#
# Prints the directory to put on PYTHONPATH and writes it to
# .cache/upstream/v65-pyverbs; the tests are in <tree>/tests, the tree being
# two levels above that directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
U=$PWD/.cache/upstream
PY=/usr/bin/python3
die() { echo "build-pyverbs: $*" >&2; exit 1; }
libdir=$(bash abi-tests/upstream/build-v65.sh) || die "build-v65.sh failed"
tree=$(cd "$libdir/../.." && pwd)
[ -f "$tree/tests/test_rdmacm.py" ] && [ -d "$tree/pyverbs" ] || die "$tree has no pyverbs or tests/test_rdmacm.py"

missing=""
for p in cython3 python3-dev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=" $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1; } ||
		die "cannot install$missing"
fi
"$PY" -c 'import Cython' 2>/dev/null || die "$PY cannot import Cython (cython3 installed?)"

B=$tree/build-pyverbs
log=$U/build-pyverbs.log
# A fresh configuration when there is none, or when the cache moved with the
# repository (CMake caches hold absolute paths).
if ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$tree" "$B/CMakeCache.txt" 2>/dev/null; then
	rm -rf "$B"
	mkdir -p "$B"
	(cd "$B" && cmake -GNinja -DIN_PLACE=1 -DNO_PYVERBS=0 -DNO_MAN_PAGES=1 -DPYTHON_EXECUTABLE="$PY" \
		-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 .. >"$log" 2>&1) ||
		die "cmake failed (see $log)"
fi
[ -x "$B/python/cython" ] || die "cmake did not find cython (see $log)"
mapfile -t mods < <(cd "$B" && ninja -t targets all | sed -n 's|^\(python/[^:]*\.so\):.*|\1|p')
((${#mods[@]} > 0)) || die "no pyverbs modules among the build targets (see $log)"
(cd "$B" && ninja "${mods[@]}" >>"$log" 2>&1) || die "pyverbs build failed (see $log)"
[ -e "$B/python/pyverbs/__version__.py" ] && compgen -G "$B/python/pyverbs/cmid.*.so" >/dev/null ||
	die "no pyverbs/cmid module after the build (see $log)"
# Byte-compile the tests and pyverbs' Python files here: the guest sees them
# read-only and would compile them on every run (slow under TCG).
"$PY" -m compileall -q "$tree/tests" "$B/python/pyverbs" >/dev/null 2>&1 || true
echo "$B/python" >"$U/v65-pyverbs"
cat "$U/v65-pyverbs"
