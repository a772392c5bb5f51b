#!/usr/bin/env bash
# 50-program-leaks.sh — (guest side) rping and ucmatose, server and client,
# both under valgrind with OUR library (LD_LIBRARY_PATH), on the guest's
# soft-RoCE device: the exchange must succeed and valgrind must report no
# definitely or indirectly lost block whose allocation stack passes through
# librdmacm (our code), and no invalid read/write/free inside it. Blocks the
# programs themselves lose are listed but do not count.
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure, 77 when
# nothing could run.
# suite-kernel: 6.1
# (make test runs it in one boot; the 7.3 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
work_dir leaks keep
command -v valgrind >/dev/null || { skp "no valgrind"; finish; }
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
mkdir -p "$tmp/lib" && ln -sf "$(readlink -f "$OURS")" "$tmp/lib/librdmacm.so.1"
VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --num-callers=30)

# Blocks lost through our library, and memory errors inside it (a valgrind
# record is the block of lines from "==PID== <header>" to the next blank one).
our_problems() { # log
	awk '
		/== *$/ { if (rec != "" && keep) print rec; rec = ""; keep = 0; next }
		{ sub(/^==[0-9]+== /, ""); rec = rec "\n    " $0 }
		/(definitely|indirectly) lost in|Invalid (read|write|free)|uninitialised|Mismatched free/ { hdr = 1 }
		/librdmacm\.so/ { if (rec ~ /(definitely|indirectly) lost in|Invalid (read|write|free)|uninitialised|Mismatched free/) keep = 1 }
		END { if (rec != "" && keep) print rec }
	' "$1"
}
summary() { grep -E "definitely lost:|indirectly lost:|ERROR SUMMARY:" "$1" | sed 's/^==[0-9]*== *//' | tr '\n' ';'; }

wait_listen() { # comm
	local i
	for ((i = 0; i < 300; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN" && return 0
		sleep 0.2
	done
	return 1
}

run() { # name "server args" "client args"
	local name=$1 s=$2 c=$3 spid src crc t0=$SECONDS p
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$tmp/lib timeout -k 5 240 "${VG[@]}" --log-file="$tmp/$name-server.vg" $s >"$tmp/$name-server.out" 2>&1 &
	spid=$!
	wait_listen || echo "# $name: no listener seen after 60 s; trying anyway"
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$tmp/lib timeout -k 5 240 "${VG[@]}" --log-file="$tmp/$name-client.vg" $c >"$tmp/$name-client.out" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	echo "# $name: server exit $src, client exit $crc ($((SECONDS - t0)) s)"
	if ((src != 0 || crc != 0)); then
		bad "$name under valgrind: server exit $src, client exit $crc: $(tail -n 3 "$tmp/$name-client.out" | tr '\n' ';')"
		return
	fi
	for p in server client; do
		local probs
		probs=$(our_problems "$tmp/$name-$p.vg")
		if [ -z "$probs" ]; then
			ok "$name $p [ours] under valgrind: nothing lost or misused in librdmacm ($(summary "$tmp/$name-$p.vg"))"
		else
			bad "$name $p [ours] under valgrind: $(summary "$tmp/$name-$p.vg")"
			echo "$probs" | head -n 80
		fi
	done
}
run rping "rping -s -a 192.0.2.1 -C 3" "rping -c -a 192.0.2.1 -I 192.0.2.1 -C 3"
run ucmatose "ucmatose -c 2" "ucmatose -c 2 -s 192.0.2.1 -b 192.0.2.1"
finish
