#!/usr/bin/env bash
# 62-rsockets-hostile.sh — (guest side) a hostile peer against our rsockets:
# build/abi-tests/hostile (abi-tests/rsock/hostile.c). `hostile victim` is a
# plain rsocket server on OUR library (LD_LIBRARY_PATH); `hostile attack`
# speaks the rsocket wire protocol itself through Debian's librdmacm and
# libibverbs and breaks it, one connection per case:
#   overrun            a data message claiming more than the whole ring
#   overrun-sum        both ring halves filled, then one byte more
#   credits            one data message more than the credits given
#   sge                bogus target SGEs written into the victim's table
#   iomap              iomap messages with indexes out of range, a wrapping
#                      iomap entry; the victim riowrites through them
#   unknown            reserved operations (1, 2, 3, 5) and unknown control
#                      values, then normal traffic
#   rpoll-wakeup       a correct peer: a burst of credit updates while the
#                      victim waits in rpoll(POLLIN), then a command that
#                      rpoll must wake up for
#   data-after-shutdown  SHUTDOWN, then more data: the victim, having seen
#                      EOF, must not read anything more
#   huge-imm           a data message claiming 0x1fffffff bytes
#   garbage-conn-data  requests with version 0, 2, 255, no private data
#   short-conn-data    1 byte of private data (the CM pads it with zeros)
#   good               a correct peer (ping, a bulk transfer across many ring
#                      halves, quit)
# Per case: the victim must reset the connection (ECONNRESET) for protocol
# violations, go on normally for what version 1 ignores, refuse bad requests,
# never report impossible call results, and stay alive. The final good
# connection and an in-process self connection must then work and the
# victim exit 0. Then once more with the victim under valgrind: no invalid
# read/write/free inside librdmacm.
# Ends with "N passed, M failed, K skipped"; exit 1 on a failure, 77 when
# nothing could run.
# suite-timeout: 300
# suite-kernel: 6.1
# (make test runs it in one boot; the 7.3 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
BIN=$REPO/build/abi-tests/hostile
ADDR=192.0.2.1
work_dir rsockets-hostile keep
[ -x "$BIN" ] || { skp "$BIN is not built (abi-tests/rsock/build.sh)"; finish; }
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
mkdir -p "$tmp/lib" && ln -sf "$(readlink -f "$OURS")" "$tmp/lib/librdmacm.so.1"

# case | what the victim must do with its connection:
#   reset   reset before reading, SO_ERROR ECONNRESET
#   any     reset or not, as long as nothing impossible happens
#   eof     served normally, closed by the peer
#   none    no connection reaches the application
#   final   eof, and the victim then exits 0
CASES=(
	"overrun|reset"
	"overrun-sum|reset"
	"credits|reset"
	"sge|any"
	"iomap|eof"
	"unknown|eof"
	"rpoll-wakeup|eof"
	"data-after-shutdown|eof"
	"huge-imm|reset"
	"garbage-conn-data|none"
	"short-conn-data|any"
	"good|final"
)
VG_CASES="overrun credits sge iomap unknown huge-imm garbage-conn-data good"

vpid="" vout=""
on_finish() { [ -n "$vpid" ] && kill "$vpid" 2>/dev/null; }

# Until the victim's listener on PORT shows up (at most 60 s; valgrind).
wait_listen() { # port
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$vpid" 2>/dev/null || return 1
		grep -q "^victim: listening on port $1$" "$vout" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# Until the victim printed "conn K end:" (at most S seconds); the line.
wait_end() { # k seconds
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		grep -m1 "^conn $1 end:" "$vout" && return 0
		kill -0 "$vpid" 2>/dev/null || break
		sleep 0.2
	done
	grep -m1 "^conn $1 end:" "$vout"
}

run_all() { # label [valgrind]
	local label=$1 vg=${2:-} port spec name want k=0 arc line why t0 vrc accepted
	port=$((7900 + RANDOM % 50 + ${#label}))
	vout=$tmp/$label-victim.out
	local pre=(timeout -k 5 240)
	[ -n "$vg" ] && pre+=(valgrind --num-callers=30 --log-file="$tmp/$label-victim.vg")
	LD_LIBRARY_PATH=$tmp/lib "${pre[@]}" "$BIN" victim "$port" "$ADDR" >"$vout" 2>&1 &
	vpid=$!
	if ! wait_listen "$port"; then
		bad "[$label] the victim did not listen: $(tail -n 3 "$vout" | tr '\n' ';')"
		kill "$vpid" 2>/dev/null
		wait "$vpid" 2>/dev/null
		vpid=""
		return
	fi
	for spec in "${CASES[@]}"; do
		IFS='|' read -r name want <<<"$spec"
		[ -n "$vg" ] && [[ " $VG_CASES " != *" $name "* ]] && continue
		t0=$SECONDS
		timeout -k 2 90 "$BIN" attack "$ADDR" "$port" "$name" >"$tmp/$label-$name.attack" 2>&1
		arc=$?
		why=""
		if [ "$want" = none ]; then
			sleep 0.5
			accepted=$(grep -c "accepted$" "$vout")
			((accepted == k)) || why+="a connection reached the application; "
			((arc == 0)) || why+="attacker: $(grep -E 'ESTABLISHED|FAILED|failed' "$tmp/$label-$name.attack" | head -n 2 | tr '\n' ';'); "
			line="(no connection)"
		else
			k=$((k + 1))
			line=$(wait_end "$k" 60)
			[ -n "$line" ] || why+="victim printed no end for connection $k; "
			case $want in
			reset) [[ $line == "conn $k end: reset:"*"SO_ERROR ECONNRESET"* ]] || why+="not reset with ECONNRESET; " ;;
			eof | final) [[ $line == "conn $k end: eof:"* ]] || why+="not served and closed normally; " ;;
			any) [[ $line == "conn $k end: "* ]] || why+="no outcome; " ;;
			esac
			((arc == 0)) || why+="attacker exit $arc: $(grep -E 'WRONG|CORRUPT|FAILED|failed|did not|no reply|guard' "$tmp/$label-$name.attack" | head -n 2 | tr '\n' ';'); "
			if grep -q "^conn $k: ANOMALY" "$vout"; then
				why+="$(grep -m1 "^conn $k: ANOMALY" "$vout"); "
			fi
		fi
		if [ "$want" != final ] && ! kill -0 "$vpid" 2>/dev/null; then
			why+="the victim died: $(tail -n 2 "$vout" | tr '\n' ';'); "
		fi
		if [ -z "$why" ]; then
			ok "[$label] $name: ${line#conn * end: } ($((SECONDS - t0)) s)"
		else
			bad "[$label] $name: $why"
			echo "# victim: $line"
			sed 's/^/#   attacker: /' "$tmp/$label-$name.attack" | tail -n 8
		fi
		if [ "$want" != final ] && ! kill -0 "$vpid" 2>/dev/null; then
			bad "[$label] the victim is gone; the remaining cases are not run"
			vpid=""
			return
		fi
	done
	# The final good connection was served; then the self test.
	wait "$vpid"
	vrc=$?
	vpid=""
	# Exit 4: healthy, but with anomalies (each failed its case above).
	if ((vrc == 0 || vrc == 4)) && grep -q "^selftest: ok" "$vout"; then
		ok "[$label] victim healthy afterwards: $(grep "^selftest:" "$vout" | cut -c11-); exit $vrc"
	else
		bad "[$label] victim afterwards: exit $vrc: $(grep -E '^(selftest|victim):' "$vout" | tail -n 2 | tr '\n' ';')"
	fi
	if [ -n "$vg" ]; then
		local probs
		probs=$(awk '
			/== *$/ { if (rec != "" && keep) print rec; rec = ""; keep = 0; next }
			{ sub(/^==[0-9]+== /, ""); rec = rec "\n    " $0 }
			/librdmacm\.so/ { if (rec ~ /Invalid (read|write|free)|uninitialised|Mismatched free|Jump to the invalid/) keep = 1 }
			END { if (rec != "" && keep) print rec }
		' "$tmp/$label-victim.vg")
		if [ -z "$probs" ]; then
			ok "[$label] no invalid read/write/free inside librdmacm ($(grep -m1 "ERROR SUMMARY" "$tmp/$label-victim.vg" | sed 's/^==[0-9]*== *//'))"
		else
			bad "[$label] memory errors inside librdmacm"
			echo "$probs" | head -n 60
		fi
	fi
}

start=$SECONDS
run_all native
if [ "${HOSTILE_VALGRIND:-1}" = 0 ]; then
	skp "valgrind run not asked for (HOSTILE_VALGRIND=0)"
elif command -v valgrind >/dev/null; then
	run_all valgrind vg
else
	skp "valgrind is not installed"
fi
echo "# $((SECONDS - start)) s"
finish
