#!/usr/bin/env bash
# 63-rsockets-extra.sh — (guest side) our rsockets where they do better than
# upstream, with OUR library only:
#  1. build/abi-tests/rs_extra (abi-tests/rsdiff/rs_extra.c): descriptors in
#     plain poll/epoll/select, bounded close after the peer was killed,
#     unaccepted connections freed with their listener, accepts not held up
#     by a stuck handshake, descriptors above 65535, a credit update that
#     reaches the sender while the receiver makes no call (also after a
#     second of calls, during which the progress engine must not wake), no
#     engine wake-up every 16 ms while a blocking receive waits,
#     1000 connect/exchange/close cycles from 8 threads with nothing left
#     behind;
#  2. riostream (and, on request, rstream and rcopy; below) under valgrind with
#     our library: the exchange succeeds and valgrind reports no invalid
#     read/write/free or uninitialised use inside librdmacm and no block
#     definitely or indirectly lost through it.
# Ends with "N passed, M failed, K skipped"; exit 1 on any failure, 77 when
# nothing could run.
# suite-timeout: 600
# suite-kernel: 6.1
# (make test runs it in one boot; the 7.3 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
work_dir rsockets-extra keep
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
mkdir -p "$tmp/lib" && ln -sf "$(readlink -f "$OURS")" "$tmp/lib/librdmacm.so.1"

# 1. rs_extra
run_case_program rs_extra "$tmp/lib" 500

# 2. the programs under valgrind
if ! command -v valgrind >/dev/null; then
	skp "valgrind is not installed"
	finish
fi
VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --num-callers=30 --error-exitcode=0)
# Our records: a valgrind record (a block of lines ending at a blank line)
# that is an error or a definite/indirect loss and names librdmacm.so.
our_problems() { # log
	awk '
		/== *$/ { if (rec != "" && keep) print rec; rec = ""; keep = 0; next }
		{ sub(/^==[0-9]+== /, ""); rec = rec "\n    " $0 }
		/librdmacm\.so/ { if (rec ~ /(definitely|indirectly) lost in|Invalid (read|write|free)|uninitialised|Mismatched free/) keep = 1 }
		END { if (rec != "" && keep) print rec }
	' "$1"
}
wait_listen() { # port
	local i
	for ((i = 0; i < 300; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 " && return 0
		sleep 0.2
	done
	return 1
}
head -c 3000000 /dev/urandom >"$tmp/copy.src"
vg_run() { # name port "server cmd" "client cmd" [check]
	local name=$1 port=$2 s=$3 c=$4 check=${5:-} spid src crc p probs
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$tmp/lib timeout -k 5 240 "${VG[@]}" --log-file="$tmp/$name-server.vg" $s >"$tmp/$name-server.out" 2>&1 &
	spid=$!
	wait_listen "$port" || echo "# $name: no listener seen; trying anyway"
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$tmp/lib timeout -k 5 240 "${VG[@]}" --log-file="$tmp/$name-client.vg" $c >"$tmp/$name-client.out" 2>&1
	crc=$?
	if [ -n "$check" ]; then
		sleep 1
		kill -INT "$spid" 2>/dev/null
		wait "$spid"
		src=0
		eval "$check" || crc=99
	else
		wait "$spid"
		src=$?
	fi
	if ((src != 0 || crc != 0)); then
		bad "$name under valgrind: server exit $src, client exit $crc: $(tail -n 2 "$tmp/$name-client.out" | tr '\n' ' ')"
		return
	fi
	for p in server client; do
		probs=$(our_problems "$tmp/$name-$p.vg")
		if [ -z "$probs" ]; then
			ok "$name $p under valgrind: nothing inside librdmacm ($(grep -E 'ERROR SUMMARY' "$tmp/$name-$p.vg" | sed 's/^==[0-9]*== *//'))"
		else
			bad "$name $p under valgrind: problems inside librdmacm:$probs"
		fi
	done
}
# riostream (rsend/rrecv and riomap/riowrite); rstream and rcopy too with
# SUITE_ALL_KERNELS=1 or RS_VALGRIND_ALL=1 (make test's time budget: each
# program pair costs a minute or more under valgrind in the TCG guest).
vg_run riostream 7702 "riostream -p 7702 -T v -S 10000 -C 100" "riostream -s 192.0.2.1 -p 7702 -T v -S 10000 -C 100"
if [ -n "${SUITE_ALL_KERNELS:-}${RS_VALGRIND_ALL:-}" ]; then
	vg_run rstream 7701 "rstream -p 7701 -T v -S 10000 -C 100" "rstream -s 192.0.2.1 -p 7701 -T v -S 10000 -C 100"
	vg_run rcopy 7703 "rcopy -p 7703" "rcopy $tmp/copy.src 192.0.2.1:$tmp/copy.dst -p 7703" "cmp -s $tmp/copy.src $tmp/copy.dst"
fi
finish
