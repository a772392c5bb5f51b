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
#   snmp FIELD   a Tcp counter of /proc/net/snmp (ActiveOpens, OutSegs, ...)
#   tcp_opens    TCP connections the kernel opened so far (both directions)
#   rxe_pkts     packets rxe0 has sent (proof that data went over RDMA)
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

# run_case_program NAME LIBDIR LIMIT: runs build/abi-tests/NAME (a case
# program built on abi-tests/rsdiff/rscase.h) with LIBDIR first in the
# library path, at most LIMIT seconds; each of its "ok"/"FAIL" lines
# becomes a result, and a run without its closing summary fails.
run_case_program() {
	local name=$1 libdir=$2 limit=$3 tag rest out="$tmp/$1.out"
	if ! [ -x "build/abi-tests/$name" ]; then
		bad "build/abi-tests/$name not built (abi-tests/rsdiff/build.sh runs on the host)"
		return
	fi
	LD_LIBRARY_PATH=$libdir timeout -k 5 "$limit" "build/abi-tests/$name" >"$out" 2>&1
	grep '^#' "$out"
	while read -r tag rest; do
		case $tag in ok) ok "$name $rest" ;; FAIL) bad "$name $rest" ;; esac
	done < <(grep -E '^(ok|FAIL) ' "$out")
	grep -qE '^[0-9]+ passed, [0-9]+ failed$' "$out" ||
		bad "$name ended without a summary: $(tail -n 2 "$out" | tr '\n' ' ')"
}

# preload_problems LOG: the records of a valgrind log that point into the
# preload or librdmacm and report an invalid access or free, an
# uninitialised use or a block definitely or indirectly lost.
preload_problems() {
	awk '
		/== *$/ { if (rec != "" && keep) print rec; rec = ""; keep = 0; next }
		{ sub(/^==[0-9]+== /, ""); rec = rec "\n    " $0 }
		/librdmacm\.so|librspreload\.so/ { if (rec ~ /(definitely|indirectly) lost in|Invalid (read|write|free)|uninitialised|Mismatched free/) keep = 1 }
		END { if (rec != "" && keep) print rec }
	' "$1"
}

snmp() { # Tcp field name -> value
	awk -v f="$1" '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == f) c = i; h = 1 } else { print $c; exit } }' /proc/net/snmp
}
tcp_opens() { echo $(($(snmp ActiveOpens) + $(snmp PassiveOpens))); }
rxe_pkts() { cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts 2>/dev/null || echo 0; }

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
