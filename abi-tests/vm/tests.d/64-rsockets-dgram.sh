#!/usr/bin/env bash
# 64-rsockets-dgram.sh — (guest side) datagram rsockets:
#  1. rdma-core's udpong (Debian's binary) between two processes on the
#     guest's soft-RoCE device (192.0.2.1; one case on fd00::1), server and
#     client each on a chosen librdmacm:
#       ours  our library (LD_LIBRARY_PATH: $RDMACM_UNDER_TEST)
#       v44   Debian's librdmacm
#       v65   upstream v65's librdmacm (abi-tests/upstream/build-v65.sh)
#     in the pairings (server–client) ours–ours, v44–v44, v65–v65,
#     ours–v44, v44–ours, ours–v65, v65–ours. A case passes when the client
#     exits 0 having printed its result line (udpong exits 0 even when a
#     test fails, so the line is what counts; a bandwidth test must report
#     transfers > 0) and the server is still serving (it never exits; it is
#     stopped afterwards). Every process runs under a timeout.
#     First every pairing but ours–ours is probed with a short exchange. A
#     pairing whose probe fails while its upstream library cannot run udpong
#     against itself either is reported as skipped (not as a pass or a
#     failure), with the reason: what the upstream client printed, and what
#     its ibv_create_ah calls returned (build/abi-tests/ah_spy.so, an
#     interposer; on RoCE upstream's datagram QP fails to get an address
#     handle for itself, which it makes without a GRH).
#  2. udpong with datagrams larger than the path allows (ours–ours): the
#     client's sends fail with EMSGSIZE ("Message too long").
#  3. build/abi-tests/rs_dgram (abi-tests/rsdiff/rs_dgram.c; our library):
#     datagram semantics, hostile UDP and UD peers, close, IPv6.
#  4. udpong server and client under valgrind with our library: the
#     exchange succeeds and valgrind reports no invalid access and no block
#     definitely or indirectly lost through librdmacm (a pair caught in
#     udpong's own stale-reply loop runs once more; see below).
# The udpong results also go to $VM_OUT/rsockets-dgram-$KERNEL.md (a table
# for the README). Ends with "N passed, M failed, K skipped"; exit 1 on a
# failure.
# suite-timeout: 600
# suite-kernel: new
# (make test runs it in one boot; the 6.1 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
V65=$REPO/.cache/upstream/v65-rdmacm
work_dir rsockets-dgram keep
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
command -v udpong >/dev/null || { skp "udpong is not installed (rdmacm-utils)"; finish; }
mkdir -p "$tmp/ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/ours/librdmacm.so.1"
# (v44's pairings only with SUITE_ALL_KERNELS=1 or DG_V44=1: make test's
# time budget; v44, like v65, cannot run udpong on soft-RoCE at all)
PAIRINGS=(ours-ours v65-v65 ours-v65 v65-ours)
[ -n "${SUITE_ALL_KERNELS:-}${DG_V44:-}" ] && PAIRINGS=(ours-ours v44-v44 v65-v65 ours-v44 v44-ours ours-v65 v65-ours)
RUN_TIMEOUT=${DG_RUN_TIMEOUT:-60}

lib_env() { # ours|v44|v65 -> one environment assignment
	case $1 in
	ours) echo "LD_LIBRARY_PATH=$tmp/ours" ;;
	v65) echo "LD_LIBRARY_PATH=$V65" ;;
	*) echo "RSOCKETS_SIDE=v44" ;;
	esac
}

# Until a UDP socket is bound to PORT (at most $2 s), or PID is gone.
wait_udp() { # port seconds pid
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		kill -0 "$3" 2>/dev/null || return 1
		ss -Hlun "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.2
	done
	return 0
}

port=7200
# One udpong run on $port (the caller moves on to the next port): prints
# "passed" or "failed (why)"; the logs stay in $tmp.
run_case() { # name pairing "server args" "client args" [client timeout]
	local name=$1 pairing=$2 sargs=$3 cargs=$4 ctmo=${5:-$RUN_TIMEOUT} senv cenv spid crc log line why=""
	senv=$(lib_env "${pairing%-*}") cenv=$(lib_env "${pairing#*-}")
	log=$tmp/$(echo "$name-$pairing" | tr -c 'A-Za-z0-9\n-' _).log
	{
		echo "### server ($senv): udpong $sargs -p $port"
		echo "### client ($cenv): udpong $cargs -p $port"
	} >"$log"
	# shellcheck disable=SC2086
	env "$senv" timeout -k 2 $((ctmo + 30)) udpong $sargs -p $port >"$log.server" 2>&1 &
	spid=$!
	wait_udp "$port" 10 "$spid"
	# shellcheck disable=SC2086
	env "$cenv" timeout -k 2 "$ctmo" udpong $cargs -p $port >"$log.client" 2>&1 &
	cpid=$!
	# Shortly before the client's timeout: are both sides still sending?
	(
		end=$((SECONDS + ctmo - 5))
		while ((SECONDS < end)); do
			sleep 1
			kill -0 "$cpid" 2>/dev/null || exit 0
		done
		ud_senders >"$log.busy"
	) &
	wpid=$!
	wait "$cpid"
	crc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	kill -0 "$spid" 2>/dev/null || why+="the server was gone before the client ended; "
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	{
		echo "### client output (exit $crc)"
		cat "$log.client"
		echo "### server output"
		cat "$log.server"
	} >>"$log"
	line=$(grep -E '^custom ' "$log.client" | head -n1)
	rm -f "$log.client" "$log.server"
	if ((crc == 124)); then
		why+="client timed out after ${ctmo}s; "
		# See ECHO_LIVELOCK below.
		(($(cat "$log.busy" 2>/dev/null || echo 0) >= 2)) && why+="$ECHO_LIVELOCK; "
	fi
	rm -f "$log.busy"
	((crc != 0 && crc != 124)) && why+="client exit $crc; "
	[ -n "$line" ] || why+="no result line; "
	# A bandwidth test reports how many datagrams the server counted.
	[ -n "$line" ] && [ "$(awk '{ print $3 }' <<<"$line")" = 0 ] && why+="the server counted no datagram; "
	if [ -z "$why" ]; then
		echo passed
	else
		local said
		said=$(sed -n '/^### client output/,/^### server output/p' "$log" | grep -vE '^(###|name )' | head -n1 | cut -c1-80)
		echo "failed (${why%; }${said:+: $said})"
	fi
}

ud_psns() { # "QPN SEND-PSN" per UD QP, sorted (from `rdma res show qp`)
	rdma res show qp 2>/dev/null |
		awk '/type UD/ { for (i = 1; i < NF; i++) { if ($i == "lqpn") q = $(i + 1); if ($i == "sq-psn") p = $(i + 1) } print q, p }' | sort
}
# How many UD QPs on the device sent at least 50 packets in one second
# (their send PSNs a second apart).
ud_senders() {
	local a b
	a=$(ud_psns)
	sleep 1
	b=$(ud_psns)
	join <(echo "$a") <(echo "$b") | awk '{ d = ($3 - $2 + 16777216) % 16777216; if (d >= 50) n++ } END { print n + 0 }'
}
# udpong's echo client (rdma-core's program, any library) can livelock
# once a datagram is lost: it resends every millisecond until the answer
# with its sequence number arrives, but receives each answer into the very
# message it resends, so after a stale answer it resends that stale
# message; when the awaited answer was lost, the stale ones circle forever
# (both processes busy, the client never done). On a slow guest the
# answers take longer than the millisecond, the resends pile up beyond the
# receive queue and datagrams are dropped, as UDP may. A run that timed out
# while both sides were still sending is marked so and run once more.
ECHO_LIVELOCK="both sides still sending at the timeout: udpong's echo livelock"

# What an upstream client's ibv_create_ah calls return (ah_spy), for the
# record of why it cannot run: "" if nothing was seen.
ah_failures() { # v44|v65
	local log=$tmp/ah-spy-$1.log
	[ -e build/abi-tests/ah_spy.so ] || return
	env "$(lib_env ours)" timeout -k 2 20 udpong -b 192.0.2.1 -T b -p $port >/dev/null 2>&1 &
	local spid=$!
	wait_udp "$port" 10 "$spid"
	env "$(lib_env "$1")" LD_PRELOAD="$REPO/build/abi-tests/ah_spy.so" timeout -k 2 10 \
		udpong -s 192.0.2.1 -T b -S 100 -C 10 -p $port >"$log" 2>&1
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	grep -m1 '^ah_spy: .*-> NULL' "$log" | sed 's/^ah_spy: //'
}

# name | server arguments | client arguments (the echo cases send 40
# messages: the fewer, the less udpong's resends pile up; see ECHO_LIVELOCK)
CASES=(
	"blocking (-T b)|-b 192.0.2.1 -T b|-s 192.0.2.1 -T b -S 1000 -C 300"
	"blocking echo (-T b -T e)|-b 192.0.2.1 -T b|-s 192.0.2.1 -T b -T e -S 1000 -C 40"
	"rpoll (-T a)|-b 192.0.2.1 -T a|-s 192.0.2.1 -T a -T e -S 500 -C 40"
	"non-blocking (-T n)|-b 192.0.2.1 -T n|-s 192.0.2.1 -T n -S 1000 -C 300"
	"echo (-T e)|-b 192.0.2.1|-s 192.0.2.1 -T e -S 1000 -C 40"
	"small, inline (-S 16)|-b 192.0.2.1 -T b|-s 192.0.2.1 -T b -T e -S 16 -C 40"
	"IPv6|-b fd00::1 -T b|-s fd00::1 -T b -T e -S 1000 -C 40"
)

have_v65=1
[ -e "$V65/librdmacm.so.1" ] || have_v65=0
# Probes: can each upstream library run udpong against itself, and each
# cross pairing at all? "ok", or why not.
declare -A probe
for pairing in "${PAIRINGS[@]}"; do
	[[ $pairing == ours-ours ]] && continue
	if [[ $pairing == *v65* ]] && ((!have_v65)); then
		probe[$pairing]="no v65 library: run abi-tests/upstream/build-v65.sh"
		continue
	fi
	r=$(run_case probe "$pairing" "-b 192.0.2.1 -T b" "-s 192.0.2.1 -T b -T e -S 100 -C 10" 15)
	port=$((port + 1))
	r=${r#failed (}
	probe[$pairing]=$([ "$r" = passed ] && echo ok || echo "${r%)}")
	echo "# probe $pairing: ${probe[$pairing]}"
done
declare -A ah_seen
for v in v44 v65; do
	[ -n "${probe[$v-$v]+probed}" ] || continue
	[ "${probe[$v-$v]:-}" = ok ] || [[ ${probe[$v-$v]:-} == "no v65 library"* ]] && continue
	ah_seen[$v]=$(ah_failures "$v")
	port=$((port + 1))
	echo "# $v's ibv_create_ah: ${ah_seen[$v]:-(no failure seen)}"
done
# Why a pairing is skipped: its own probe failed while its upstream side
# cannot run datagrams against itself either.
skip_reason() { # pairing -> reason, or nothing
	local p=$1 v why
	[[ $p == ours-ours ]] && return
	[ "${probe[$p]}" = ok ] && return
	[[ ${probe[$p]} == "no v65 library"* ]] && { echo "${probe[$p]}"; return; }
	v=${p/ours-/}
	v=${v/-ours/}
	v=${v%%-*}
	[ "${probe[$v-$v]}" = ok ] && return
	why="upstream $v cannot run udpong against itself on rxe: ${probe[$v-$v]}"
	[ -n "${ah_seen[$v]:-}" ] && why+="; its ibv_create_ah $(sed 's/^ibv_create_ah //' <<<"${ah_seen[$v]}")"
	[[ $p == "$v-$v" ]] || why+="; this pairing: ${probe[$p]}"
	echo "$why"
}

table=$OUT/rsockets-dgram-$KERNEL.md
{
	echo "udpong (Debian's binary) between librdmacm builds, server–client, on kernel $(uname -r),"
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'); ours = $OURS."
	echo
	echo "| case | $(IFS='|'; sed 's/|/ | /g' <<<"${PAIRINGS[*]}") |"
	echo "|---$(printf '|---%.0s' "${PAIRINGS[@]}")|"
} >"$table"
declare -A skip_note
for spec in "${CASES[@]}"; do
	IFS='|' read -r case_name sargs cargs <<<"$spec"
	[[ -z ${DG_ONLY:-} || $case_name == *"$DG_ONLY"* ]] || continue
	row="| $case_name |"
	for pairing in "${PAIRINGS[@]}"; do
		why=$(skip_reason "$pairing")
		if [ -n "$why" ]; then
			r="skipped ($why)"
		else
			r=$(run_case "$case_name" "$pairing" "$sargs" "$cargs")
			port=$((port + 1))
			if [[ $r == *"$ECHO_LIVELOCK"* ]]; then
				echo "rerun: udpong $case_name [$pairing]: $r" >&2
				r=$(run_case "$case_name" "$pairing" "$sargs" "$cargs")
				port=$((port + 1))
				[ "$r" = passed ] && r="passed (once more after udpong's echo livelock)"
			fi
		fi
		case $r in
		passed*) ok "udpong $case_name [$pairing]${r#passed}" ;;
		skipped*)
			# One line per pairing; each case still counts as skipped.
			skip=$((skip + 1))
			[ -n "${skip_note[$pairing]:-}" ] || { skip_note[$pairing]=1; echo "SKIP udpong [$pairing]: ${r#skipped }"; }
			;;
		*) bad "udpong $case_name [$pairing]: $r" ;;
		esac
		row+=" ${r%% (*} |"
	done
	echo "$row" >>"$table"
done

# 2. datagrams larger than the path: EMSGSIZE on our side.
mtu=$(ibv_devinfo -d rxe0 2>/dev/null | awk '/active_mtu/ { print $2; exit }')
log=$tmp/emsgsize.log
senv=$(lib_env ours)
env "$senv" timeout -k 2 60 udpong -b 192.0.2.1 -T b -p $port >"$log.server" 2>&1 &
spid=$!
wait_udp "$port" 10 "$spid"
env "$senv" timeout -k 2 30 udpong -s 192.0.2.1 -T b -S 2056 -C 10 -p $port >"$log" 2>&1
crc=$?
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
port=$((port + 1))
if ((crc == 0)) && grep -q 'rsend: Message too long' "$log" && ! grep -q '^custom ' "$log"; then
	ok "udpong -S 2056 (more than a 2048-byte slot less the header; path MTU $mtu): rsend fails with EMSGSIZE"
else
	bad "udpong -S 2056: client exit $crc, expected 'rsend: Message too long': $(tr '\n' ' ' <"$log" | cut -c1-200)"
fi
if [ "${mtu%% *}" = 1024 ]; then
	env "$senv" timeout -k 2 60 udpong -b 192.0.2.1 -T b -p $port >"$log.server" 2>&1 &
	spid=$!
	wait_udp "$port" 10 "$spid"
	env "$senv" timeout -k 2 30 udpong -s 192.0.2.1 -T b -S 1017 -C 10 -p $port >"$log" 2>&1
	crc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	port=$((port + 1))
	if ((crc == 0)) && grep -q 'rsend: Message too long' "$log"; then
		ok "udpong -S 1017 (path MTU 1024, 8-byte header): rsend fails with EMSGSIZE"
	else
		bad "udpong -S 1017 on a 1024-byte path: client exit $crc: $(tr '\n' ' ' <"$log" | cut -c1-200)"
	fi
fi

# 3. rs_dgram
run_case_program rs_dgram "$tmp/ours" 400

# 4. udpong under valgrind (ours–ours)
if ! command -v valgrind >/dev/null; then
	skp "valgrind is not installed"
	finish
fi
VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
	--num-callers=30 --error-exitcode=0)
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
# The pair: server and client under valgrind; the client's exit code in crc.
vg_pair() {
	LD_LIBRARY_PATH=$tmp/ours timeout -k 5 300 "${VG[@]}" --log-file="$tmp/vg-server.vg" \
		udpong -b 192.0.2.1 -T b -p $port >"$tmp/vg-server.out" 2>&1 &
	spid=$!
	wait_udp "$port" 120 "$spid"
	LD_LIBRARY_PATH=$tmp/ours timeout -k 5 180 "${VG[@]}" --log-file="$tmp/vg-client.vg" \
		udpong -s 192.0.2.1 -T b -T e -S 500 -C 50 -p $port >"$tmp/vg-client.out" 2>&1
	crc=$?
	sleep 1
	# The server serves forever: stopped with SIGINT (valgrind then writes its
	# report, leaks included).
	kill -INT "$spid" 2>/dev/null
	wait "$spid"
}
vg_pair
# udpong's own defect: its client waits 1 s for each control reply and
# sends again, and a reply with another sequence number overwrites the
# message it sends next; a login reply that took over 1 s (the server
# under valgrind in an emulated guest) arrives twice, the second one is
# taken as stale and sent back as a login, and the two processes then
# exchange logins until the client's timeout (seen once, CI of
# 2026-11-29: ~60 000 "client login" lines in 180-240 s). Such a pair (the
# client timed out, the server printed over 100 logins) runs once more and
# must pass then.
logins=$(grep -c '^client login' "$tmp/vg-server.out" 2>/dev/null)
if ((crc == 124 && ${logins:-0} > 100)); then
	echo "# udpong under valgrind: the client timed out with the server at $logins logins (udpong's stale-reply loop): once more"
	mkdir -p "$tmp/vg-first" && mv "$tmp"/vg-server.* "$tmp"/vg-client.* "$tmp/vg-first/"
	port=$((port + 1))
	vg_pair
fi
if ((crc != 0)) || ! grep -q '^custom ' "$tmp/vg-client.out"; then
	bad "udpong under valgrind: client exit $crc: $(tail -n 3 "$tmp/vg-client.out" | tr '\n' ' ')"
else
	for p in server client; do
		if ! grep -q 'ERROR SUMMARY' "$tmp/vg-$p.vg"; then
			bad "udpong $p under valgrind: no valgrind report"
			continue
		fi
		probs=$(our_problems "$tmp/vg-$p.vg")
		grep -E 'ERROR SUMMARY|definitely lost|indirectly lost|possibly lost' "$tmp/vg-$p.vg" | sed "s/^==[0-9]*== */# $p: /"
		if [ -z "$probs" ]; then
			ok "udpong $p under valgrind: nothing inside librdmacm ($(grep -E 'ERROR SUMMARY' "$tmp/vg-$p.vg" | sed 's/^==[0-9]*== *//'))"
		else
			bad "udpong $p under valgrind: problems inside librdmacm:$probs"
		fi
	done
fi
finish
