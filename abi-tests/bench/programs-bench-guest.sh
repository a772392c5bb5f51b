#!/usr/bin/env bash
# programs-bench-guest.sh — (guest side of make bench) whole programs,
# exec to exit: rdma-core's cmtime (100 and 1000 connections), ucmatose
# -c 100 and rping -C 1000, server and client on the guest's soft-RoCE
# address, with Debian's librdmacm ("upstream") and with ours
# (LD_PRELOAD), the libraries alternating pair by pair (the order swapping
# every round), ROUNDS rounds (default 5). For each: the median wall time
# of the client process and of the server process (cmtime's server serves
# until stopped: client only), their ranges, and the ratio against the
# target of 0.90x (printed as met or MISS); then the CPU time each process
# used (user and system, build/bench/cputime), and, from one more run of
# each under callgrind, the user-space instructions the process spent in
# librdmacm, callees included (libcost.awk): what the library itself does.
set -uo pipefail
OURS=$PWD/build/librdmacm.so.1
CPUTIME=$PWD/build/bench/cputime
LIBCOST=$PWD/abi-tests/bench/libcost.awk
ROUNDS=${ROUNDS:-5}
A=192.0.2.1
# name | server command | client command | server exits by itself (1/0)
PAIRS=(
	"cmtime 100|cmtime -b $A|cmtime -s $A -b $A -c 100|0"
	"cmtime 1000|cmtime -b $A|cmtime -s $A -b $A -c 1000|0"
	"ucmatose -c 100|ucmatose -c 100|ucmatose -c 100 -s $A -b $A|1"
	"rping -C 1000|rping -s -a $A -C 1000|rping -c -a $A -I $A -C 1000|1"
)
declare -A vals cpu
listening() { # [program name] [tries]: an id (the program's, or any) is listening on the device
	local i pat="state LISTEN"
	[ -n "${1:-}" ] && pat="state LISTEN.*comm $1\|comm $1.*state LISTEN"
	for ((i = 0; i < ${2:-200}; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "$pat" && { sleep 0.3; return 0; }
		sleep 0.05
	done
	return 1
}
one() { # lib spec -> "client_ms user_ms sys_ms [server_ms user_ms sys_ms]" (exiting servers only)
	local lib=$1 name scmd ccmd exits e=() spid rc
	IFS='|' read -r name scmd ccmd exits <<<"$2"
	[ "$lib" = ours ] && e=(LD_PRELOAD="$OURS")
	# shellcheck disable=SC2086
	env "${e[@]}" "$CPUTIME" /tmp/pb.server timeout 300 $scmd >/dev/null 2>&1 &
	spid=$!
	listening "${scmd%% *}" || { kill "$spid" 2>/dev/null; echo "FAIL $name ($lib): the server did not listen"; return 1; }
	# shellcheck disable=SC2086
	env "${e[@]}" "$CPUTIME" /tmp/pb.client timeout 300 $ccmd >/dev/null 2>&1
	rc=$?
	[ "$exits" = 1 ] || kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	((rc == 0)) || { echo "FAIL $name ($lib): client exit $rc"; return 1; }
	# client wall, user, sys, then the server's (exiting servers only)
	if [ "$exits" = 1 ]; then echo "$(cat /tmp/pb.client) $(cat /tmp/pb.server)"; else cat /tmp/pb.client; fi
	sleep 0.5
}
# instr lib spec side -> user-space instructions in librdmacm of the
# client or server process (run under callgrind, its peer not)
instr() {
	local lib=$1 name scmd ccmd exits e=() spid s=() c=() f=/tmp/pb.cg
	IFS='|' read -r name scmd ccmd exits <<<"$2"
	[ "$lib" = ours ] && e=(LD_PRELOAD="$OURS")
	rm -f $f
	if [ "$3" = server ]; then s=(valgrind --tool=callgrind --callgrind-out-file=$f); else c=(valgrind --tool=callgrind --callgrind-out-file=$f); fi
	# shellcheck disable=SC2086
	env "${e[@]}" timeout 600 "${s[@]}" $scmd >/dev/null 2>&1 &
	spid=$!
	listening "" 1200 || { kill "$spid" 2>/dev/null; echo "FAIL $name ($lib): the server did not listen"; return 1; }
	# shellcheck disable=SC2086
	env "${e[@]}" timeout 600 "${c[@]}" $ccmd >/dev/null 2>&1 || { kill "$spid" 2>/dev/null; echo "FAIL $name ($lib): client"; return 1; }
	[ "$exits" = 1 ] || kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	[ -s $f ] || { echo "FAIL $name ($lib): no callgrind output"; return 1; }
	awk -v lib=/librdmacm.so -f "$LIBCOST" $f
	sleep 0.5
}
for ((r = 1; r <= ROUNDS; r++)); do
	for spec in "${PAIRS[@]}"; do
		name=${spec%%|*}
		order="upstream ours"
		((r % 2 == 0)) && order="ours upstream"
		for lib in $order; do
			out=$(one $lib "$spec") || { echo "$out"; exit 1; }
			read -r c cu cs s su ss <<<"$out"
			vals[$lib.$name.client]+="$c "
			cpu[$lib.$name.client.user]+="$cu " cpu[$lib.$name.client.sys]+="$cs "
			if [ -n "${s:-}" ]; then
				vals[$lib.$name.server]+="$s "
				cpu[$lib.$name.server.user]+="$su " cpu[$lib.$name.server.sys]+="$ss "
			fi
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
echo
printf '%-24s %17s %17s %7s  %s\n' "CPU ms (median)" "upstream usr+sys" "ours usr+sys" ratio "upstream's user time / its wall time"
for spec in "${PAIRS[@]}"; do
	name=${spec%%|*}
	for side in client server; do
		[ -n "${cpu[upstream.$name.$side.user]:-}" ] || continue
		uu=$(med <<<"${cpu[upstream.$name.$side.user]}") us=$(med <<<"${cpu[upstream.$name.$side.sys]}")
		ou=$(med <<<"${cpu[ours.$name.$side.user]}") os=$(med <<<"${cpu[ours.$name.$side.sys]}")
		w=$(med <<<"${vals[upstream.$name.$side]}")
		printf '%-24s %17s %17s %7s  %s\n' "$name, $side" "$uu+$us" "$ou+$os" \
			"$(awk -v a=$((ou + os)) -v b=$((uu + us)) 'BEGIN { printf "%.2f", a / b }')" \
			"$(awk -v a="$uu" -v b="$w" 'BEGIN { printf "%.2f", a / b }')"
	done
done
echo "(user and system CPU of each process, its children included, medians over the same rounds)"
echo
printf '%-24s %14s %14s %7s\n' "in librdmacm (1 run)" "upstream instr" "ours instr" ratio
for spec in "${PAIRS[@]}"; do
	IFS='|' read -r name _ _ exits <<<"$spec"
	sides=client
	[ "$exits" = 1 ] && sides="client server"
	for side in $sides; do
		u=$(instr upstream "$spec" $side) || { echo "$u"; exit 1; }
		m=$(instr ours "$spec" $side) || { echo "$m"; exit 1; }
		printf '%-24s %14s %14s %7s\n' "$name, $side" "$u" "$m" "$(awk -v a="$m" -v b="$u" 'BEGIN { printf "%.2f", a / b }')"
	done
done
echo "(user-space instructions of the process spent in librdmacm, its calls into libibverbs, the provider and libc"
echo " included, callgrind, one run of the process under callgrind with its peer running natively)"
