#!/usr/bin/env bash
# preload-bench-guest.sh — (guest side of make bench) unmodified programs
# through a preload library on the guest's soft-RoCE address, interleaved
# round by round (ROUNDS, default 5), against the same programs over the
# kernel's TCP on the same address:
#   iperf3: 3 s of one TCP stream, the receiver's bits per second;
#   redis-benchmark: PING_INLINE with 50 clients, 5000 requests, requests
#   per second and the p50 latency in ms.
# Stacks: ours (build/librspreload.so over our library), tcp (no preload),
# debian (Debian's preload over Debian's library: a dash where it fails).
# Medians over the rounds, with their range; ratio ours / tcp.
set -uo pipefail
L=$PWD/build
ADDR=192.0.2.1
ROUNDS=${ROUNDS:-5}
DEB_PRE=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
declare -A vals
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "-") }'; }
range() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print (NR ? lo "-" hi : "-") }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
stack_env() {
	case $1 in
	ours) echo "LD_LIBRARY_PATH=$L LD_PRELOAD=$L/librspreload.so" ;;
	debian) echo "LD_PRELOAD=$DEB_PRE" ;;
	*) echo "X=1" ;;
	esac
}
wait_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 " && { sleep 0.3; return 0; }
		ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.1
	done
}
port=7900
iperf() { # stack -> bits/s or nothing
	local env s
	read -ra env <<<"$(stack_env "$1")"
	port=$((port + 1))
	env "${env[@]}" timeout 30 iperf3 -s -1 -B $ADDR -p $port -J >/tmp/ips.json 2>/dev/null &
	s=$!
	wait_port $port
	env "${env[@]}" timeout 30 iperf3 -c $ADDR -p $port -t 3 -J >/tmp/ipc.json 2>/dev/null
	wait $s 2>/dev/null
	# nothing received counts as a failure (Debian's preload: iperf3 runs, moves no data)
	python3 -c 'import json; b = json.load(open("/tmp/ips.json"))["end"]["sum_received"]["bits_per_second"]; b > 0 and print("%.0f" % b)' 2>/dev/null
}
redis() { # stack -> "rps p50" or nothing
	local env s out
	read -ra env <<<"$(stack_env "$1")"
	port=$((port + 1))
	env "${env[@]}" timeout 60 redis-server --bind $ADDR --port $port --save '' --appendonly no --protected-mode no \
		--logfile /dev/null >/dev/null 2>&1 &
	s=$!
	wait_port $port
	out=$(env "${env[@]}" timeout 40 redis-benchmark -h $ADDR -p $port -t ping -n 5000 -q 2>/dev/null | tr '\r' '\n' |
		grep -m1 '^PING_INLINE: .*requests per second')
	kill $s 2>/dev/null
	wait $s 2>/dev/null
	[ -n "$out" ] && sed -E 's/^PING_INLINE: ([0-9.]+) requests per second, p50=([0-9.]+) msec.*/\1 \2/' <<<"$out"
}
STACKS=(ours tcp)
[ -e "$DEB_PRE" ] && STACKS+=(debian)
declare -A gave_up
for ((r = 1; r <= ROUNDS; r++)); do
	for st in "${STACKS[@]}"; do
		# a stack that failed a program in the first round is not tried again
		if [ -z "${gave_up[$st,iperf]:-}" ]; then
			v=$(iperf "$st")
			[ -z "$v" ] && ((r == 1)) && gave_up[$st,iperf]=1
			vals[$st,bw]+=" ${v:+$(awk -v b="$v" 'BEGIN { printf "%.3f", b / 1e9 }')}"
		fi
		if [ -z "${gave_up[$st,redis]:-}" ]; then
			read -r rps p50 <<<"$(redis "$st")"
			[ -z "${rps:-}" ] && ((r == 1)) && gave_up[$st,redis]=1
			vals[$st,rps]+=" ${rps:-}"
			vals[$st,p50]+=" ${p50:-}"
		fi
	done
done
printf '%-34s %10s %10s %8s %10s   %-14s %-14s\n' "through the preload" "rdmacm-rs" "TCP" "ratio" "Debian" "ours range" "TCP range"
for m in bw:"iperf3 Gb/s" rps:"redis PING requests/s" p50:"redis PING p50 ms"; do
	k=${m%%:*} name=${m#*:}
	o=$(med <<<"${vals[ours,$k]}") t=$(med <<<"${vals[tcp,$k]}") d=$(med <<<"${vals[debian,$k]:-}")
	printf '%-34s %10s %10s %8s %10s   %-14s %-14s\n' "$name" "$o" "$t" "$(ratio "$o" "$t")" "$d" \
		"$(range <<<"${vals[ours,$k]}")" "$(range <<<"${vals[tcp,$k]}")"
done
echo "(medians of $ROUNDS interleaved rounds, server and client on 192.0.2.1, kernel $(uname -r) under qemu TCG, soft-RoCE;"
echo " TCP: the same programs without a preload; Debian: its librspreload over its librdmacm, '-' where it fails)"
