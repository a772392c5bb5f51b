#!/usr/bin/env bash
# programs-bench-guest.sh — (guest side of make bench) whole programs,
# exec to exit: rdma-core's cmtime (100 and 1000 connections), ucmatose
# -c 100 and rping -C 1000, server and client on the guest's soft-RoCE
# address, with Debian's librdmacm ("upstream") and with ours
# (LD_PRELOAD), the libraries alternating pair by pair (the order swapping
# every round), ROUNDS rounds (default 5). For each: the median wall time
# of the client process and of the server process (cmtime's server serves
# until stopped: client only), their ranges, and the ratio against the
# target of 0.90x (printed as met or MISS).
set -uo pipefail
OURS=$PWD/build/librdmacm.so.1
ROUNDS=${ROUNDS:-5}
A=192.0.2.1
# name | server command | client command | server exits by itself (1/0)
PAIRS=(
	"cmtime 100|cmtime -b $A|cmtime -s $A -b $A -c 100|0"
	"cmtime 1000|cmtime -b $A|cmtime -s $A -b $A -c 1000|0"
	"ucmatose -c 100|ucmatose -c 100|ucmatose -c 100 -s $A -b $A|1"
	"rping -C 1000|rping -s -a $A -C 1000|rping -c -a $A -I $A -C 1000|1"
)
declare -A vals
now_ms() { date +%s%3N; }
listening() { # program name: its id is listening on the device
	local i
	for ((i = 0; i < 200; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN.*comm $1\|comm $1.*state LISTEN" && { sleep 0.3; return 0; }
		sleep 0.05
	done
	return 1
}
one() { # lib spec -> "client_ms server_ms" (server_ms "-" for a daemon)
	local lib=$1 name scmd ccmd exits e=() s0 c0 c1 s1 spid rc
	IFS='|' read -r name scmd ccmd exits <<<"$2"
	[ "$lib" = ours ] && e=(LD_PRELOAD="$OURS")
	s0=$(now_ms)
	# shellcheck disable=SC2086
	env "${e[@]}" timeout 300 $scmd >/dev/null 2>&1 &
	spid=$!
	listening "${scmd%% *}" || { kill "$spid" 2>/dev/null; echo "FAIL $name ($lib): the server did not listen"; return 1; }
	c0=$(now_ms)
	# shellcheck disable=SC2086
	env "${e[@]}" timeout 300 $ccmd >/dev/null 2>&1
	rc=$?
	c1=$(now_ms)
	if [ "$exits" = 1 ]; then
		wait "$spid"
		s1=$(now_ms)
	else
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		s1=""
	fi
	((rc == 0)) || { echo "FAIL $name ($lib): client exit $rc"; return 1; }
	echo "$((c1 - c0)) ${s1:+$((s1 - s0))}"
	sleep 0.5
}
for ((r = 1; r <= ROUNDS; r++)); do
	for spec in "${PAIRS[@]}"; do
		name=${spec%%|*}
		order="upstream ours"
		((r % 2 == 0)) && order="ours upstream"
		for lib in $order; do
			out=$(one $lib "$spec") || { echo "$out"; exit 1; }
			read -r c s <<<"$out"
			vals[$lib.$name.client]+="$c "
			[ -n "${s:-}" ] && vals[$lib.$name.server]+="$s "
		done
	done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
range() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%d-%d", lo, hi }'; }
printf '%-24s %11s %11s %7s %13s %13s  %s\n' "program (exec to exit)" "upstream ms" "ours ms" ratio "upstream range" "ours range" "target 0.90x"
for spec in "${PAIRS[@]}"; do
	name=${spec%%|*}
	for side in client server; do
		[ -n "${vals[upstream.$name.$side]:-}" ] || continue
		u=$(med <<<"${vals[upstream.$name.$side]}") m=$(med <<<"${vals[ours.$name.$side]}")
		printf '%-24s %11s %11s %7s %13s %13s  %s\n' "$name, $side" "$u" "$m" \
			"$(awk -v a="$m" -v b="$u" 'BEGIN { printf "%.2f", a / b }')" \
			"$(range <<<"${vals[upstream.$name.$side]}")" "$(range <<<"${vals[ours.$name.$side]}")" \
			"$(awk -v a="$m" -v b="$u" 'BEGIN { print (a <= 0.9 * b) ? "met" : "MISS" }')"
	done
done
echo "(wall ms per process, medians of $ROUNDS alternating rounds, kernel $(uname -r) under qemu TCG; a server's time runs"
echo " from its start, through the client's run, to its exit; cmtime's server is stopped after the client: client only)"
