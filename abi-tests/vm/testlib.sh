# testlib.sh — (guest side) the preamble every abi-tests/vm/tests.d/*.sh
# sources; not a test itself (it lives outside tests.d, so suite.sh does
# not run it). After `set -uo pipefail`:
#
#   source "$(dirname "$0")/../testlib.sh"
#
# It changes to the repository root and sets
#   REPO     the repository root (the cwd from here on)
#   KERNEL   $VM_KERNEL, else `uname -r`
#   OUT      $VM_OUT, else /tmp
#   pass fail skip   the counters (0)
# and defines
#   ok MSG...    "ok   MSG", one more passed
#   bad MSG...   "FAIL MSG", one more failed
#   skp MSG...   "SKIP MSG", one more skipped
#   work_dir NAME [keep]   a fresh directory /tmp/NAME.XXXXXX in $tmp, removed
#                by finish; with `keep`, finish first copies it to
#                $OUT/NAME-$KERNEL (the logs and results of the run)
#   finish       runs the script's on_finish function if it has one (e.g. to
#                take down what it set up), copies and removes $tmp (see
#                work_dir), prints "N passed, M failed, K skipped" and exits:
#                1 on any failure, else $EMPTY_EXIT when nothing passed
#                (default 77: nothing could run), else 0. A script whose
#                skips alone are a success sets EMPTY_EXIT=0.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
REPO=$PWD
KERNEL=${VM_KERNEL:-$(uname -r)}
OUT=${VM_OUT:-/tmp}
EMPTY_EXIT=77
pass=0 fail=0 skip=0
tmp=""
_testlib_keep=""

ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
skp() { echo "SKIP $*"; skip=$((skip + 1)); }

work_dir() { # NAME [keep]
	tmp=$(mktemp -d "/tmp/$1.XXXXXX")
	_testlib_keep=""
	[ "${2:-}" = keep ] && _testlib_keep=$1
}

finish() {
	declare -F on_finish >/dev/null && on_finish
	if [ -n "$tmp" ]; then
		if [ -n "$_testlib_keep" ]; then
			mkdir -p "$OUT" 2>/dev/null && rm -rf "$OUT/$_testlib_keep-$KERNEL" &&
				cp -r "$tmp" "$OUT/$_testlib_keep-$KERNEL" 2>/dev/null
		fi
		rm -rf "$tmp"
	fi
	echo "$pass passed, $fail failed, $skip skipped"
	((fail)) && exit 1
	((pass)) || exit "$EMPTY_EXIT"
	exit 0
}
