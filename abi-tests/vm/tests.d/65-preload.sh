#!/usr/bin/env bash
# 65-preload.sh — (guest side) unmodified socket programs over RDMA through
# a preload library, server and client on rxe0's address:
#   rstream -T s (rdma-core's program in its plain-socket mode, data
#   verified), socat (a 4 MiB file, cmp), nc.openbsd (the same), iperf3 (3 s of TCP
#   stream, both sides' byte counts), redis-server + redis-benchmark
#   (ping inline and bulk, set, get; 2 000 requests each, 50 clients;
#   PRELOAD_REDIS_N another count) and redis-cli (a value set and
#   read back).
# Stacks (preload over library; Debian's preload runs every program on
# kernel 6.1, only rstream on the newer kernel):
#   ours-ours  build/librspreload.so over our library   (counted)
#   deb-ours   Debian's librspreload.so over our library (counted where
#              Debian's preload passes over Debian's library)
#   deb-deb    Debian's librspreload.so over Debian's library (the
#              baseline: recorded, never counted)
# A pass over rsockets also needs proof that RDMA carried the data: the
# kernel opened no TCP connection meanwhile (/proc/net/snmp ActiveOpens
# and PassiveOpens unchanged) and rxe0 sent packets (hw_counters). Then one
# fallback case: a preloaded client connecting to a TCP server on
# 127.0.0.1 (no RDMA there) goes over TCP.
# The table goes to $VM_OUT/preload-$KERNEL.md. Ends with
# "N passed, M failed, K skipped".
# suite-timeout: 900
# suite-kernel: new
# (make test runs it in one boot; the 6.1 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
PRE=$REPO/build/librspreload.so
DEB_PRE=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
ADDR=192.0.2.1
work_dir preload keep
[ -e "$OURS" ] && [ -e "$PRE" ] || { skp "library or preload not built"; finish; }
mkdir -p "$tmp/ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/ours/librdmacm.so.1"
FULL_T=${PRELOAD_RUN_TIMEOUT:-120}
T=$FULL_T

stack_env() { # ours-ours|deb-ours|deb-deb -> environment assignments
	case $1 in
	ours-ours) echo "LD_LIBRARY_PATH=$tmp/ours LD_PRELOAD=$PRE" ;;
	deb-ours) echo "LD_LIBRARY_PATH=$tmp/ours LD_PRELOAD=$DEB_PRE" ;;
	deb-deb) echo "LD_PRELOAD=$DEB_PRE" ;;
	esac
}


# Until something listens on PORT (an rsocket shows in `rdma res`, a TCP
# socket in ss), at most 10 s, or PID is gone.
wait_port() { # port pid
	local i
	for ((i = 0; i < 50; i++)); do
		kill -0 "$2" 2>/dev/null || return 1
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 " && { sleep 0.3; return 0; }
		ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.2
	done
	return 0
}

head -c 4194304 /dev/urandom >"$tmp/in.bin"
declare -A RES
port=7700
# run_case NAME STACK: runs case_NAME with the stack's environment;
# the case sets `why` (empty: it worked). Records the result.
run_case() { # name stack
	local name=$1 stack=$2 env t0 p0 t1 p1 log T
	read -ra env <<<"$(stack_env "$stack")"
	# Debian's preload is the baseline, not under test: less patience.
	T=$FULL_T
	[[ $stack == deb-* ]] && T=${PRELOAD_DEB_TIMEOUT:-20}
	log=$tmp/$name-$stack.log
	why=""
	port=$((port + 1))
	t0=$(tcp_opens) p0=$(rxe_pkts)
	"case_$name" >"$log" 2>&1
	t1=$(tcp_opens) p1=$(rxe_pkts)
	if [ -z "$why" ]; then
		((t1 == t0)) || why="the kernel opened $((t1 - t0)) TCP connections (not over rsockets)"
		((p1 - p0 > 100)) || why="${why:+$why; }rxe0 sent $((p1 - p0)) packets"
	fi
	echo "    ($stack: $((t1 - t0)) TCP opens, $((p1 - p0)) rxe packets)" >>"$log"
	if [ -z "$why" ]; then RES[$name,$stack]=passed; else RES[$name,$stack]="failed ($why)"; fi
	echo "# $name $stack: ${RES[$name,$stack]}"
	[ -n "$why" ] && sed 's/^/    | /' "$log" | tail -n 25
}

# Wait for a server (PID: its `timeout` wrapper) whose client has
# finished: it should end at once (the peer closed). If it is still there
# after SECS, its threads' kernel and user stacks go into the case's log
# (what a hang looks like, for the next reader) before `timeout` ends it.
wait_server() { # pid secs
	local i c
	for ((i = 0; i < $2 * 5; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "the server is still running $2 s after its client ended; its stacks:"
		for c in $(pgrep -P "$1"); do
			for t in /proc/"$c"/task/*; do
				echo "  thread ${t##*/} ($(cat "$t"/comm 2>/dev/null)) in $(cat "$t"/wchan 2>/dev/null)"
				sed 's/^/    /' "$t"/stack 2>/dev/null | head -n 12
			done
			timeout 30 gdb -batch -p "$c" -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' | head -n 80
		done
	fi
	wait "$1"
}

case_socat() {
	rm -f "$tmp/out.bin"
	env "${env[@]}" timeout -k 2 "$T" socat -u "TCP4-LISTEN:$port,bind=$ADDR,reuseaddr" "OPEN:$tmp/out.bin,creat,trunc" &
	local s=$!
	wait_port "$port" "$s"
	env "${env[@]}" timeout -k 2 "$T" socat -u "OPEN:$tmp/in.bin" "TCP4:$ADDR:$port" || why="client exit $?"
	wait_server "$s" 60 || why="${why:+$why; }server exit $?"
	cmp -s "$tmp/in.bin" "$tmp/out.bin" || why="${why:+$why; }copy differs"
}

case_nc() {
	rm -f "$tmp/out.bin"
	env "${env[@]}" timeout -k 2 "$T" nc.openbsd -l "$ADDR" "$port" >"$tmp/out.bin" &
	local s=$!
	wait_port "$port" "$s"
	env "${env[@]}" timeout -k 2 "$T" nc.openbsd -N "$ADDR" "$port" <"$tmp/in.bin" || why="client exit $?"
	wait_server "$s" 60 || why="${why:+$why; }server exit $?"
	cmp -s "$tmp/in.bin" "$tmp/out.bin" || why="${why:+$why; }copy differs"
}

case_iperf3() {
	env "${env[@]}" timeout -k 2 "$T" iperf3 -s -1 -B "$ADDR" -p "$port" -J >"$tmp/iperf-s.json" 2>&1 &
	local s=$!
	wait_port "$port" "$s"
	env "${env[@]}" timeout -k 2 "$T" iperf3 -c "$ADDR" -p "$port" -t 3 -J >"$tmp/iperf-c.json" 2>&1 || why="client exit $?"
	wait "$s" || why="${why:+$why; }server exit $?"
	local got
	got=$(python3 - "$tmp/iperf-c.json" "$tmp/iperf-s.json" <<-'EOF'
		import json, sys
		c, s = (json.load(open(f)) for f in sys.argv[1:3])
		sent = c["end"]["sum_sent"]["bytes"]
		recv = s["end"]["sum_received"]["bytes"]
		bps = c["end"]["sum_received"]["bits_per_second"]
		print(f"{sent} {recv} {bps:.0f}" if sent > 0 and recv > 0 else "none")
	EOF
	) || got=none
	echo "iperf3: sent, received, bits/s: $got"
	[ "$got" != none ] || why="${why:+$why; }no bytes counted"
	IPERF_RATE[$stack]=${got##* }
}
declare -A IPERF_RATE

case_redis() {
	env "${env[@]}" timeout -k 2 "$T" redis-server --bind "$ADDR" --port "$port" --save '' --appendonly no \
		--protected-mode no --daemonize no --logfile "$tmp/redis-$stack.log" &
	local s=$! out
	wait_port "$port" "$s"
	# (progress lines end in CR: only the final ones are kept)
	out=$(env "${env[@]}" timeout -k 2 "$T" redis-benchmark -h "$ADDR" -p "$port" -t ping,set,get -n "${PRELOAD_REDIS_N:-2000}" -q 2>&1 |
		tr '\r' '\n' | grep -E 'requests per second|rror|refused' | head -n 20)
	echo "$out"
	for t in PING_INLINE PING_MBULK SET GET; do
		grep -q "^$t: .*requests per second" <<<"$out" || why="${why:+$why; }no $t result"
	done
	REDIS_PING[$stack]=$(grep -oE '^PING_INLINE: [0-9.]+' <<<"$out" | grep -oE '[0-9.]+$')
	env "${env[@]}" timeout -k 2 30 redis-cli -h "$ADDR" -p "$port" set rdmacm-rs-key value-42 >/dev/null
	local v
	v=$(env "${env[@]}" timeout -k 2 30 redis-cli -h "$ADDR" -p "$port" get rdmacm-rs-key)
	[ "$v" = value-42 ] || why="${why:+$why; }redis-cli read back '$v'"
	kill "$s" 2>/dev/null
	wait "$s"
}
declare -A REDIS_PING

# rdma-core's own rstream in its plain-socket mode (-T s), the program
# upstream meant for its preload: 1000 verified 64 KiB transfers.
case_rstream() {
	env "${env[@]}" timeout -k 2 "$T" rstream -T s -T v -b "$ADDR" -p "$port" -S 65536 -C 1000 &
	local s=$!
	wait_port "$port" "$s"
	env "${env[@]}" timeout -k 2 "$T" rstream -T s -T v -s "$ADDR" -p "$port" -S 65536 -C 1000 || why="client exit $?"
	wait "$s" || why="${why:+$why; }server exit $?"
}

CASES=(rstream socat nc iperf3 redis)
for c in "${CASES[@]}"; do
	for st in ours-ours deb-ours deb-deb; do
		if [[ $st == deb-* ]] && [ ! -e "$DEB_PRE" ]; then
			RES[$c,$st]="not run (no Debian librspreload)"
			continue
		fi
		# Debian's preload (a baseline that mostly crashes) runs every
		# program on Debian 12's own kernel (make test runs this script
		# on 7.3 only; SUITE_ALL_KERNELS=1 on both); on the newer kernel
		# only rstream, the program it works with (time budget).
		if [[ $st == deb-* && $KERNEL != 6.1* && $c != rstream ]]; then
			RES[$c,$st]="not run on this kernel (on 6.1 with SUITE_ALL_KERNELS=1)"
			continue
		fi
		run_case "$c" "$st"
	done
	case ${RES[$c,ours-ours]} in
	passed) ok "$c through our preload over our library" ;;
	*) bad "$c through our preload over our library: ${RES[$c,ours-ours]}" ;;
	esac
	if [ "${RES[$c,deb-deb]:-}" = passed ]; then
		if [ "${RES[$c,deb-ours]}" = passed ]; then
			ok "$c through Debian's preload over our library (as over Debian's)"
		else
			bad "$c through Debian's preload: passes over Debian's library, not over ours: ${RES[$c,deb-ours]}"
		fi
	elif [[ ${RES[$c,deb-deb]:-} == "not run"* ]]; then
		skp "$c through Debian's preload: ${RES[$c,deb-deb]}"
	else
		skp "$c through Debian's preload: fails over Debian's own library too (${RES[$c,deb-deb]:-not run}); over ours: ${RES[$c,deb-ours]:-not run}"
	fi
done

# Fallback: no RDMA on 127.0.0.1, so the preloaded client's connect goes
# over TCP to an ordinary server.
rm -f "$tmp/out.bin"
timeout -k 2 "$T" socat -u TCP4-LISTEN:7799,bind=127.0.0.1,reuseaddr "OPEN:$tmp/out.bin,creat,trunc" &
s=$!
wait_port 7799 "$s"
t0=$(tcp_opens)
env LD_LIBRARY_PATH="$tmp/ours" LD_PRELOAD="$PRE" timeout -k 2 "$T" socat -u "OPEN:$tmp/in.bin" TCP4:127.0.0.1:7799
rc=$?
wait "$s"
t1=$(tcp_opens)
if ((rc == 0)) && cmp -s "$tmp/in.bin" "$tmp/out.bin" && ((t1 > t0)); then
	ok "fallback: a preloaded client reaches a TCP server on 127.0.0.1 over TCP"
else
	bad "fallback to TCP: client exit $rc, $((t1 - t0)) TCP opens, copy $(cmp -s "$tmp/in.bin" "$tmp/out.bin" && echo same || echo differs)"
fi

# socat through our preload under valgrind, both sides: the copy succeeds
# and valgrind reports no invalid access or uninitialised use inside the
# preload or librdmacm and no block definitely or indirectly lost through
# them (preload_problems, testlib.sh).
if command -v valgrind >/dev/null; then
	VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --num-callers=30 --error-exitcode=0)
	head -c 1048576 /dev/urandom >"$tmp/vg.bin"
	rm -f "$tmp/vg.out"
	env LD_LIBRARY_PATH="$tmp/ours" LD_PRELOAD="$PRE" timeout -k 5 300 "${VG[@]}" --log-file="$tmp/vg-server.log" \
		socat -u "TCP4-LISTEN:7798,bind=$ADDR,reuseaddr" "OPEN:$tmp/vg.out,creat,trunc" &
	s=$!
	wait_port 7798 "$s"
	sleep 2
	env LD_LIBRARY_PATH="$tmp/ours" LD_PRELOAD="$PRE" timeout -k 5 300 "${VG[@]}" --log-file="$tmp/vg-client.log" \
		socat -u "OPEN:$tmp/vg.bin" "TCP4:$ADDR:7798"
	crc=$?
	wait "$s"
	src=$?
	if ((crc == 0 && src == 0)) && cmp -s "$tmp/vg.bin" "$tmp/vg.out"; then
		for side in server client; do
			probs=$(preload_problems "$tmp/vg-$side.log")
			if [ -z "$probs" ]; then
				ok "socat $side through our preload under valgrind: nothing in the preload or librdmacm ($(grep -E 'ERROR SUMMARY' "$tmp/vg-$side.log" | sed 's/^==[0-9]*== *//'))"
			else
				bad "socat $side through our preload under valgrind:$probs"
			fi
		done
	else
		bad "socat through our preload under valgrind: server exit $src, client exit $crc, copy $(cmp -s "$tmp/vg.bin" "$tmp/vg.out" && echo same || echo differs)"
	fi
else
	skp "valgrind is not installed"
fi

{
	echo "| program | our preload, our library | Debian's preload, our library | Debian's preload, Debian's library |"
	echo "|---|---|---|---|"
	for c in "${CASES[@]}"; do
		echo "| $c | ${RES[$c,ours-ours]} | ${RES[$c,deb-ours]} | ${RES[$c,deb-deb]} |"
	done
	echo
	echo "iperf3 bits/s: ours-ours ${IPERF_RATE[ours-ours]:-–}, deb-ours ${IPERF_RATE[deb-ours]:-–}, deb-deb ${IPERF_RATE[deb-deb]:-–}"
	echo "redis PING_INLINE requests/s: ours-ours ${REDIS_PING[ours-ours]:-–}, deb-ours ${REDIS_PING[deb-ours]:-–}, deb-deb ${REDIS_PING[deb-deb]:-–}"
} >"$OUT/preload-$KERNEL.md" 2>/dev/null
cat "$OUT/preload-$KERNEL.md" 2>/dev/null
finish
