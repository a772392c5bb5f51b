#!/usr/bin/env bash
# suite-kernel: new
# (make test runs it in one boot; the 6.1 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
# 66-preload-fork.sh — (guest side) the preload's fork mode
# (RDMAV_FORK_SAFE=1 on both sides): stream sockets start as TCP and move
# to rsockets at their first data call after connect or accept, in the
# exchange upstream's preload uses (4 zero bytes "ready" on TCP, an
# rsocket listener at the TCP port under the semaphore /rsocket_fork).
#
# rstream -T f -T v (rdma-core's program: plain sockets, the server forks a
# child per connection, data verified), one connection of 100 x 64 KiB
# each way (PRELOAD_FORK_COUNT: another count), server-client pairings of
# stacks (preload over library):
#   ours  build/librspreload.so over our library
#   deb   Debian's librspreload.so over Debian's library (v44)
#   v65   upstream v65's librspreload.so over v65's library
# ours-ours is counted; ours-deb and deb-ours are counted where deb-deb
# passes, ours-v65 and v65-ours where v65-v65 passes (the baselines are
# recorded, never counted). Then, ours on both sides: rstream -T f -T a
# (the server child polls before its first read: upstream's preload
# documents that as unsupported, ours moves the socket in the poll),
# rstream -T f over IPv6,
# abi-tests/preload/forkmode.py (a Python forking echo server: an epoll
# registration made before the move, a poll before the first read, four
# connections moving at once), and socat with its `fork` option.
# A pass needs proof that the data went over RDMA although the connection
# began as TCP: the kernel opened exactly the TCP connections the programs
# made (2 ends per connection), the TCP segments sent stayed far below
# what the data would need over TCP (the handshake, "ready" and the
# shutdown are a few per connection), rxe0 sent at least one packet per
# 4 KiB of data, and `rdma res show cm_id` listed a connected rsocket on
# the server's port while the data flowed.
# Then the fallbacks (our preload, a peer without the preload): a plain
# server that sends first (its bytes are not "ready": TCP kept at once), a
# plain server the client sends to first (no "ready" comes: TCP kept after
# RSPRELOAD_FORK_TIMEOUT), a plain client (abi-tests/preload/plainclient.py)
# that sends at once to our fork-mode server (TCP kept: its data came
# before the server's first read, or after "ready", which the client then
# gets), the same client sending 1 s after it connected (the server sent
# "ready" and waits: the data ends the wait, TCP kept, the client gets
# "ready" alone), and both sides ours over 127.0.0.1
# (no RDMA there: the client's rsocket connect fails after "ready", it
# reads "ready" away and both keep TCP), all with the data intact. Last,
# rstream -T f with our preload under valgrind.
# The table goes to $VM_OUT/preload-fork-$KERNEL.md. Ends with
# "N passed, M failed, K skipped".
# suite-timeout: 900
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
PRE=$REPO/build/librspreload.so
DEB_PRE=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
V65_DIR=$REPO/.cache/upstream/v65-rdmacm
V65_PRE=$REPO/.cache/upstream/rdma-core-65.0/build/lib/librspreload.so
ADDR=192.0.2.1
work_dir preload-fork keep
[ -e "$OURS" ] && [ -e "$PRE" ] || { skp "library or preload not built"; finish; }
mkdir -p "$tmp/ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/ours/librdmacm.so.1"
T=${PRELOAD_FORK_TIMEOUT:-120}
COUNT=${PRELOAD_FORK_COUNT:-100} SIZE=65536

have() { # stack
	case $1 in
	ours) return 0 ;;
	deb) [ -e "$DEB_PRE" ] ;;
	v65) [ -e "$V65_PRE" ] && [ -e "$V65_DIR/librdmacm.so.1" ] ;;
	esac
}
stack_env() { # stack -> environment assignments
	case $1 in
	ours) echo "RDMAV_FORK_SAFE=1 LD_LIBRARY_PATH=$tmp/ours LD_PRELOAD=$PRE" ;;
	deb) echo "RDMAV_FORK_SAFE=1 LD_PRELOAD=$DEB_PRE" ;;
	v65) echo "RDMAV_FORK_SAFE=1 LD_LIBRARY_PATH=$V65_DIR LD_PRELOAD=$V65_PRE" ;;
	plain) echo "RDMAV_FORK_SAFE=1" ;;
	esac
}


# Until a TCP listener on PORT shows (at most 10 s) or PID is gone.
wait_tcp_listen() { # port pid
	local i
	for ((i = 0; i < 50; i++)); do
		kill -0 "$2" 2>/dev/null || return 1
		ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.2
	done
	return 0
}

# Sample `rdma res show cm_id` while PID runs: the connected ids whose
# line matches the extended regular expression go to FILE.
# Samples back to back: socat's 8 MiB cross rxe in a few tenths of a
# second once moved, and a 0.3 s pause between samples missed them once
# (7.3, CI of 2026-11-25: 11 535 rxe packets, 7 TCP segments, no sample).
# (One process a sample, the lines picked by the shell: three processes a
# sample kept a CPU busy and slowed the transfer they watch.)
watch_cm_id() { # regex pid file
	local out l
	while kill -0 "$2" 2>/dev/null; do
		out=$(rdma res show cm_id 2>/dev/null)
		while IFS= read -r l; do
			[[ $l == *"state CONNECT"* && $l =~ $1 ]] && echo "$l"
		done <<<"$out" >>"$3"
	done
}

# prove CONNECTIONS BYTES: the counters since snap() (and the cm_id file)
# against what RDMA must show; appends the reasons to `why`.
snap() { t0=$(tcp_opens) s0=$(snmp OutSegs) p0=$(rxe_pkts); : >"$tmp/cm_id"; }
prove() { # connections bytes
	local t1 s1 p1 segs opens pk
	t1=$(tcp_opens) s1=$(snmp OutSegs) p1=$(rxe_pkts)
	opens=$((t1 - t0)) segs=$((s1 - s0)) pk=$((p1 - p0))
	echo "    (TCP opens $opens, TCP segments sent $segs, rxe0 packets sent $pk, cm_id lines $(wc -l <"$tmp/cm_id"))"
	((opens == 2 * $1)) || why="${why:+$why; }$opens TCP connection ends opened, not $((2 * $1))"
	((segs < 30 * $1)) || why="${why:+$why; }$segs TCP segments sent (the data went over TCP?)"
	((pk >= $2 / 4096)) || why="${why:+$why; }rxe0 sent only $pk packets for $2 bytes"
	[ -s "$tmp/cm_id" ] || why="${why:+$why; }no connected rsocket of the programs in rdma res"
}

declare -A RES
port=7600
RADDR=$ADDR
# rstream_case SERVER CLIENT [EXTRA -T OPTIONS]: one verified connection.
rstream_case() { # server client [opts...]
	local ss=$1 cs=$2 se ce s c log
	shift 2
	read -ra se <<<"$(stack_env "$ss")"
	read -ra ce <<<"$(stack_env "$cs")"
	port=$((port + 1))
	log=$tmp/rstream-$ss-$cs${1:+-a}$([ "$RADDR" = "$ADDR" ] || echo -ipv6).log
	why=""
	snap
	env "${se[@]}" RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" rstream -T f -T v "$@" -b "$RADDR" -p "$port" \
		-S "$SIZE" -C "$COUNT" >"$log.server" 2>&1 &
	s=$!
	wait_tcp_listen "$port" "$s"
	env "${ce[@]}" RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" rstream -T f -T v "$@" -s "$RADDR" -p "$port" \
		-S "$SIZE" -C "$COUNT" >"$log.client" 2>&1 &
	c=$!
	watch_cm_id ":$port( |$)" "$c" "$tmp/cm_id"
	wait "$c" || why="client exit $?"
	wait "$s" || why="${why:+$why; }server exit $?"
	{
		echo "server ($ss):"
		sed 's/^/  | /' "$log.server"
		echo "client ($cs):"
		sed 's/^/  | /' "$log.client"
	} >"$log"
	[ -z "$why" ] && prove 1 $((2 * COUNT * SIZE)) >>"$log"
	[ -n "$why" ] && tail -n 30 "$log" | sed 's/^/    /'
}

record() { # key
	if [ -z "$why" ]; then RES[$1]=passed; else RES[$1]="failed ($why)"; fi
	echo "# $1: ${RES[$1]}"
}

# (v65's pairings only with SUITE_ALL_KERNELS=1 or PRELOAD_FORK_V65=1:
# make test's time budget; Debian's preload speaks the same fork exchange)
UPS=(deb)
[ -n "${SUITE_ALL_KERNELS:-}${PRELOAD_FORK_V65:-}" ] && UPS=(deb v65)
PAIRS=(ours-ours)
for up in "${UPS[@]}"; do PAIRS+=("$up-$up" "ours-$up" "$up-ours"); done
for p in "${PAIRS[@]}"; do
	s=${p%-*} c=${p#*-}
	if ! have "$s" || ! have "$c"; then
		RES[$p]="not run (stack missing)"
		continue
	fi
	rstream_case "$s" "$c"
	record "$p"
done
case ${RES[ours-ours]} in
passed) ok "rstream -T f: our preload on both sides, the connection moved from TCP to RDMA" ;;
*) bad "rstream -T f, our preload on both sides: ${RES[ours-ours]}" ;;
esac
for up in "${UPS[@]}"; do
	for p in "ours-$up" "$up-ours"; do
		if [ "${RES[$up-$up]:-}" = passed ]; then
			case ${RES[$p]} in
			passed) ok "rstream -T f, $p (server-client): moved to RDMA, as $up-$up does" ;;
			*) bad "rstream -T f, $p (server-client): ${RES[$p]} ($up-$up passes)" ;;
			esac
		else
			skp "rstream -T f, $p: $up's preload fails against itself (${RES[$up-$up]:-not run}); $p: ${RES[$p]:-not run}"
		fi
	done
done

# The server child polls before its first read.
rstream_case ours ours -T a
record ours-ours-async
case ${RES[ours-ours-async]} in
passed) ok "rstream -T f -T a (the server child polls before reading): moved to RDMA" ;;
*) bad "rstream -T f -T a: ${RES[ours-ours-async]}" ;;
esac

# IPv6 (rxe0's fd00::1): the rsocket listener on the wildcard [::].
RADDR=fd00::1
rstream_case ours ours
RADDR=$ADDR
record ours-ours-ipv6
case ${RES[ours-ours-ipv6]} in
passed) ok "rstream -T f over IPv6: moved to RDMA" ;;
*) bad "rstream -T f over IPv6: ${RES[ours-ours-ipv6]}" ;;
esac

# A Python forking echo server and its client.
read -ra oe <<<"$(stack_env ours)"
port=$((port + 1))
why=""
snap
env "${oe[@]}" RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" python3 abi-tests/preload/forkmode.py "$ADDR" \
	>"$tmp/forkmode.log" 2>&1 &
pid=$!
watch_cm_id "comm python3" "$pid" "$tmp/cm_id"
wait "$pid"
rc=$?
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/forkmode.log" | tail -n1)
[[ $rc == 0 && $line =~ ^[0-9]+\ passed,\ 0\ failed$ ]] || why="exit $rc: ${line:-no summary}"
conns=$(grep -c '^ok .*connected over TCP first' "$tmp/forkmode.log")
bytes=$(sed -n 's/^ok   .*: \([0-9]*\) bytes echoed intact$/\1/p' "$tmp/forkmode.log" | awk '{ s += 2 * $1 } END { print s + 0 }')
[ -z "$why" ] && prove "$conns" "$bytes" >>"$tmp/forkmode.log"
if [ -z "$why" ]; then
	ok "forkmode.py (forking echo server: epoll registration before the move, poll before the first read, 4 moves at once): $line, $conns connections over RDMA"
else
	bad "forkmode.py: $why"
	sed 's/^/    | /' "$tmp/forkmode.log" | tail -n 40
fi

# socat with `fork`: the child relays the connection into a file.
port=$((port + 1))
why=""
rm -f "$tmp/socat.out"
head -c $((8 << 20)) /dev/urandom >"$tmp/in.bin"
snap
env "${oe[@]}" timeout -k 2 "$T" socat -u "TCP4-LISTEN:$port,bind=$ADDR,reuseaddr,fork" \
	"OPEN:$tmp/socat.out,creat,append" >"$tmp/socat-server.log" 2>&1 &
s=$!
wait_tcp_listen "$port" "$s"
env "${oe[@]}" RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" socat -u "OPEN:$tmp/in.bin" "TCP4:$ADDR:$port" \
	>"$tmp/socat-client.log" 2>&1 &
c=$!
watch_cm_id ":$port( |$)" "$c" "$tmp/cm_id"
wait "$c" || why="client exit $?"
# The child ends when the client's end of file arrives; the parent
# listens on.
for ((i = 0; i < 100; i++)); do
	[ "$(stat -c %s "$tmp/socat.out" 2>/dev/null)" = $((8 << 20)) ] && break
	sleep 0.2
done
sleep 0.5
kill "$s" 2>/dev/null
wait "$s"
cmp -s "$tmp/in.bin" "$tmp/socat.out" || why="${why:+$why; }copy differs"
[ -z "$why" ] && prove 1 $((8 << 20)) >>"$tmp/socat-client.log"
if [ -z "$why" ]; then
	ok "socat with fork: 8 MiB into the server's child, moved to RDMA"
else
	bad "socat with fork: $why"
	cat "$tmp/socat-server.log" "$tmp/socat-client.log" | sed 's/^/    | /' | tail -n 20
fi

# Fallbacks: a peer without the preload; TCP kept, data intact.
# fallback NAME SERVER-STACK SERVER-SENDS(0|1) CLIENT-STACK MIN-SECONDS MAX-SECONDS
fallback() {
	local name=$1 ss=$2 sends=$3 cs=$4 min=$5 max=$6 se ce s t0s el
	read -ra se <<<"$(stack_env "$ss")"
	read -ra ce <<<"$(stack_env "$cs")"
	port=$((port + 1))
	why=""
	rm -f "$tmp/fb.out"
	head -c $((1 << 20)) /dev/urandom >"$tmp/fb.in"
	t0=$(tcp_opens) s0=$(snmp OutSegs)
	t0s=$(date +%s.%N)
	if ((sends)); then
		env "${se[@]}" timeout -k 2 "$T" socat -u "OPEN:$tmp/fb.in" "TCP4-LISTEN:$port,bind=$ADDR,reuseaddr" &
		s=$!
		wait_tcp_listen "$port" "$s"
		env "${ce[@]}" RSPRELOAD_FORK_TIMEOUT=3 RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" \
			socat -u "TCP4:$ADDR:$port" "OPEN:$tmp/fb.out,creat,trunc" 2>"$tmp/fb-$name.log" || why="client exit $?"
	else
		env "${se[@]}" RSPRELOAD_FORK_TIMEOUT=3 RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" \
			socat -u "TCP4-LISTEN:$port,bind=$ADDR,reuseaddr" "OPEN:$tmp/fb.out,creat,trunc" 2>"$tmp/fb-$name.log" &
		s=$!
		wait_tcp_listen "$port" "$s"
		if [ "$cs" = plain ]; then
			# A client without the preload: plainclient.py reads what
			# comes back ("ready" when the server's first read came
			# before the data) before it closes. (socat -u closed with
			# "ready" unread: its kernel reset the connection and
			# dropped the data it had not sent yet, 1 run in ~6.)
			timeout -k 2 "$T" python3 "$REPO/abi-tests/preload/plainclient.py" "$ADDR" "$port" "$tmp/fb.in" \
				"${delay:-0}" >"$tmp/fb-$name.back" 2>>"$tmp/fb-$name.log" || why="client exit $?"
		else
			env "${ce[@]}" RSPRELOAD_FORK_TIMEOUT=3 RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" \
				socat -u "OPEN:$tmp/fb.in" "TCP4:$ADDR:$port" 2>>"$tmp/fb-$name.log" || why="client exit $?"
		fi
	fi
	wait "$s" || why="${why:+$why; }server exit $?"
	el=$(echo "$(date +%s.%N) - $t0s" | bc)
	if [ "$cs" = plain ]; then
		# What the client got back: nothing when its data came first,
		# "ready" (4 zero bytes) when the server's first read came first.
		local back
		back=$(cat "$tmp/fb-$name.back" 2>/dev/null)
		if grep -q 'the peer went on over TCP' "$tmp/fb-$name.log"; then
			[ "$back" = "back 4 00000000" ] || why="${why:+$why; }the client got '$back', not \"ready\" alone"
		elif grep -q 'the peer spoke (or hung up) before any "ready"' "$tmp/fb-$name.log"; then
			[ "$back" = "back 0 -" ] || why="${why:+$why; }the client got '$back', not nothing"
		else
			why="${why:+$why; }no reason for keeping TCP in the server's debug lines"
		fi
		[ -z "${want_reason:-}" ] || grep -q "$want_reason" "$tmp/fb-$name.log" ||
			why="${why:+$why; }the server did not report '$want_reason'"
	fi
	fallback_check "$name" "$min" "$max"
}

# fallback_check NAME MIN MAX: the copy, the TCP counters since t0/s0, the
# time taken (el), the reason our preload gave (its debug lines).
fallback_check() {
	local name=$1 min=$2 max=$3 reason
	[ "$name" = loopback ] || cmp -s "$tmp/fb.in" "$tmp/fb.out" || why="${why:+$why; }copy differs"
	(($(tcp_opens) - t0 == 2)) || why="${why:+$why; }$(($(tcp_opens) - t0)) TCP connection ends, not 2"
	(($(snmp OutSegs) - s0 >= 16)) || why="${why:+$why; }only $(($(snmp OutSegs) - s0)) TCP segments for the data (not over TCP?)"
	[ "$(echo "$el >= $min && $el < $max" | bc)" = 1 ] || why="${why:+$why; }took ${el}s, expected $min to $max"
	reason=$(grep -h 'rspreload\[' "$tmp/fb-$name.log" | grep -v 'TCP kept$' | sed 's/^rspreload\[[0-9]*\]: fd [0-9]*: //' | sort -u | paste -sd ';' -)
	if [ -z "$why" ]; then
		ok "fallback $name: TCP kept, data intact, $(printf %.1f "$el") s ($reason)"
	else
		bad "fallback $name: $why"
		sed 's/^/    | /' "$tmp/fb-$name.log" | tail -n 10
	fi
}
fallback server-speaks-first plain 1 ours 0 10
fallback no-ready plain 0 ours 3 15
fallback plain-client ours 0 plain 0 10
# The client's data comes 1 s after it connected: the server has sent
# "ready" and waits for the rsocket connection when the data comes.
delay=1 want_reason="the peer went on over TCP" fallback plain-client-late ours 0 plain 1 10

# Both sides ours over 127.0.0.1 (no RDMA device there): the client's
# rsocket connect fails after "ready", it reads "ready" away; the server
# sees it go on over TCP. rstream verifies the data (it would take a
# "ready" left in the stream for data).
port=$((port + 1))
why=""
read -ra oe <<<"$(stack_env ours)"
t0=$(tcp_opens) s0=$(snmp OutSegs)
t0s=$(date +%s.%N)
env "${oe[@]}" RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" rstream -T f -T v -b 127.0.0.1 -p "$port" -S 65536 -C 50 \
	>"$tmp/fb-loopback.log" 2>&1 &
s=$!
wait_tcp_listen "$port" "$s"
env "${oe[@]}" RSPRELOAD_FORK_DEBUG=1 timeout -k 2 "$T" rstream -T f -T v -s 127.0.0.1 -p "$port" -S 65536 -C 50 \
	>>"$tmp/fb-loopback.log" 2>&1 || why="client exit $?"
wait "$s" || why="${why:+$why; }server exit $?"
el=$(echo "$(date +%s.%N) - $t0s" | bc)
fallback_check loopback 0 10

# rstream -T f with our preload on both sides under valgrind (the server,
# the child it forks, the client): the data verified, and nothing invalid,
# uninitialised or lost inside the preload or librdmacm (preload_problems,
# testlib.sh).
if command -v valgrind >/dev/null; then
	VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --num-callers=30 --error-exitcode=0)
	port=$((port + 1))
	why=""
	mkdir -p "$tmp/vg"
	env "${oe[@]}" timeout -k 5 300 "${VG[@]}" --log-file="$tmp/vg/server.%p.log" \
		rstream -T f -T v -b "$ADDR" -p "$port" -S 4096 -C 100 >"$tmp/vg/server.out" 2>&1 &
	s=$!
	wait_tcp_listen "$port" "$s"
	env "${oe[@]}" timeout -k 5 300 "${VG[@]}" --log-file="$tmp/vg/client.%p.log" \
		rstream -T f -T v -s "$ADDR" -p "$port" -S 4096 -C 100 >"$tmp/vg/client.out" 2>&1 || why="client exit $?"
	wait "$s" || why="${why:+$why; }server exit $?"
	logs=("$tmp"/vg/*.log)
	((${#logs[@]} >= 3)) || why="${why:+$why; }${#logs[@]} valgrind logs, not 3 (server, its child, client)"
	if [ -z "$why" ]; then
		probs=""
		for l in "${logs[@]}"; do
			p=$(preload_problems "$l")
			[ -z "$p" ] || probs="$probs
  $(basename "$l"):$p"
		done
		if [ -z "$probs" ]; then
			ok "rstream -T f under valgrind (server, its child, client): nothing in the preload or librdmacm"
		else
			bad "rstream -T f under valgrind:$probs"
		fi
	else
		bad "rstream -T f under valgrind: $why"
		cat "$tmp"/vg/*.out | sed 's/^/    | /' | tail -n 20
	fi
else
	skp "valgrind is not installed"
fi

{
	echo "| rstream -T f -T v, server-client | result |"
	echo "|---|---|"
	for p in "${PAIRS[@]}" ours-ours-async ours-ours-ipv6; do
		echo "| $p | ${RES[$p]:-not run} |"
	done
} >"$OUT/preload-fork-$KERNEL.md" 2>/dev/null
cat "$OUT/preload-fork-$KERNEL.md" 2>/dev/null
finish
