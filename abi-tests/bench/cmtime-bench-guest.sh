#!/usr/bin/env bash
# cmtime-bench-guest.sh — (guest side of make bench) rdma-core's cmtime, 100
# connections over the guest's soft-RoCE device, server and client with
# Debian's librdmacm ("upstream") and with ours (LD_PRELOAD), alternating,
# ROUNDS rounds each (default 7): the median of cmtime's per-connection
# time (us / conn) for each step, and the ratio ours / upstream.
set -uo pipefail
OURS=$PWD/build/librdmacm.so.1
ROUNDS=${ROUNDS:-7}
CONNS=${CONNS:-100}
declare -A vals
steps=()
wait_listen() {
	local i
	for ((i = 0; i < 100; i++)); do
		# (LISTEN shows before the kernel's IB CM listens: a moment more)
		rdma res show cm_id 2>/dev/null | grep -q "comm cmtime.*state LISTEN\|state LISTEN.*comm cmtime" && sleep 0.3 && return 0
		sleep 0.1
	done
}
one() { # lib -> cmtime client output on stdout
	local e=() spid
	[ "$1" = ours ] && e=(LD_PRELOAD="$OURS")
	env "${e[@]}" timeout 120 cmtime -b 192.0.2.1 >/dev/null 2>&1 &
	spid=$!
	wait_listen
	env "${e[@]}" timeout 120 cmtime -s 192.0.2.1 -b 192.0.2.1 -c "$CONNS"
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	sleep 0.5
}
for ((r = 1; r <= ROUNDS; r++)); do
	for lib in upstream ours; do
		out=$(one $lib) || { echo "cmtime failed ($lib, round $r)"; echo "$out"; exit 1; }
		while IFS= read -r line; do
			[[ $line == *:* ]] || continue
			name=${line%%:*}
			name=${name%"${name##*[! ]}"}
			read -r -a nums <<<"${line#*:}"
			((${#nums[@]} == 4)) || continue
			[[ " ${steps[*]} " == *" ${name// /_} "* ]] || steps+=("${name// /_}")
			vals[$lib.${name// /_}]+="${nums[3]} "
		done <<<"$out"
	done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
range() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'; }
printf '%-16s %12s %12s %8s %14s %14s\n' "cmtime step" "upstream us" "rdmacm-rs us" ratio "upstream range" "ours range"
for s in "${steps[@]}"; do
	u=$(med <<<"${vals[upstream.$s]}"); m=$(med <<<"${vals[ours.$s]}")
	printf '%-16s %12s %12s %8s %14s %14s\n' "${s//_/ }" "$u" "$m" "$(awk -v a="$m" -v b="$u" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" \
		"$(range <<<"${vals[upstream.$s]}")" "$(range <<<"${vals[ours.$s]}")"
	[ -n "${BENCH_RAW:-}" ] && echo "    upstream: ${vals[upstream.$s]}| ours: ${vals[ours.$s]}"
done
echo "(us per connection, medians of $ROUNDS rounds x $CONNS connections, client side, kernel $(uname -r) under qemu TCG)"
