#!/usr/bin/env bash
# 73-perftest-race.sh — (guest side) the cause of the back-to-back failures
# of perftest -R (README, "Memory pressure and hostile input"), made to
# happen every time. Debian's perftest (4.5-0.17) with -R connects twice,
# the second time right after a handshake over the first connection, while
# its server only then listens for it; abi-tests/fault/slowlisten.so
# (preloaded into the server) starts the server's second rdma_listen 3 s
# late, so the client's second connection always comes first. With each
# library (ours through LD_LIBRARY_PATH, Debian's v44), ib_read_lat -R:
#   - the client must be rejected with reason 8 (invalid service id): the
#     race, reproduced;
#   - with ours the client must then end with an error, not a signal or a
#     hang: perftest's retry loop calls the library on the ids and channel
#     it has just destroyed, which our library refuses (EINVAL).
# Debian's result is shown beside ours (its client crashes there: a use
# after free inside the library).
# Ends with "N passed, M failed, K skipped".
# suite-timeout: 180
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
source "$(dirname "$0")/../programs.sh"
work_dir perftest-race keep
B=build/abi-tests
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
case $OURS in /*) ;; *) OURS=$REPO/$OURS ;; esac
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
[ -e "$B/slowlisten.so" ] || { bad "$B/slowlisten.so not built (abi-tests/fault/build.sh runs on the host)"; finish; }
command -v ib_read_lat >/dev/null || { skp "perftest is not installed"; finish; }
mkdir -p "$tmp/ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/ours/librdmacm.so.1"
SHIM=$REPO/$B/slowlisten.so
SCMD="ib_read_lat -R -F -d rxe0 -n 200"
CCMD="ib_read_lat -R -F -d rxe0 -n 200 192.0.2.1"
for lib in v44 ours; do
	env=()
	[ $lib = ours ] && env=(LD_LIBRARY_PATH="$tmp/ours")
	env "${env[@]}" LD_PRELOAD="$SHIM" timeout -k 2 60 $SCMD >"$tmp/$lib-server.log" 2>&1 &
	spid=$!
	wait_server "$SCMD" "$spid"
	(env "${env[@]}" timeout -k 2 40 $CCMD; exit $?) >"$tmp/$lib-client.log" 2>&1
	crc=$?
	for ((i = 0; i < 25; i++)); do kill -0 "$spid" 2>/dev/null || break; _nap 0.2; done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	grep -q 'slowlisten: the second' "$tmp/$lib-server.log" && delayed=yes || delayed=no
	grep -q 'REJECTED; error: 8\b' "$tmp/$lib-client.log" && rej=yes || rej=no
	how="exit $crc"
	((crc == 124)) && how="hung (timed out after 40 s)"
	((crc > 128 && crc != 124)) && how="killed by signal $((crc - 128))"
	last=$(grep -E 'Failed|error' "$tmp/$lib-client.log" | tail -n 3 | tr '\n' ' ')
	echo "# $lib: server's second listen delayed: $delayed; client rejected with reason 8: $rej; client $how; last: $last"
	[ $lib = v44 ] && continue
	if [ $delayed = yes ] && [ $rej = yes ]; then
		ok "the race reproduced with ours: the client's second connection was rejected (reason 8)"
	else
		bad "the race was not reproduced with ours (second listen delayed: $delayed, rejected: $rej): $(tail -n 5 "$tmp/$lib-client.log" | tr '\n' ' ')"
	fi
	if ((crc != 0 && crc < 124)); then
		ok "ours: perftest's retry on its destroyed ids ends in an error ($how), no crash, no hang"
	else
		bad "ours: the client $how: $(tail -n 5 "$tmp/$lib-client.log" | tr '\n' ' ')"
	fi
done
finish
