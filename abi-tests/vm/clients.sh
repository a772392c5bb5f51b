#!/usr/bin/env bash
# clients.sh — (guest side) third-party programs that use librdmacm, as
# server/client pairs on the soft-RoCE bed: libfabric's verbs provider
# (fi_info, fi_pingpong), UCX over its rdmacm connection manager (io_demo), qperf
# with -cm1, fio's rdma ioengine. Sourced by tests.d/81-clients.sh and
# tests.d/80-package.sh; defines CLIENTS and
#   run_client SPEC ENV-ASSIGNMENT|"" LOG   one pair; prints "passed" or
#                                          "failed (<why>)"; returns 0/1
# A spec: name | server command | client command | daemon (the server
# serves for ever: stopped once the client is done; only the client counts)
# or "once" (the server exits by itself: both exit codes count) or "alone"
# (no server: the server command is "-") | a pattern
# (grep -E) the client's output must show: its result (fio exits 0 when
# its engine failed; its summary then lacks the I/O). Commands may start
# with VAR=value words (the programs' own settings on this bed); a server
# command may start with shim=NAME[,NAME...]: build/abi-tests/NAME.so (built
# by abi-tests/fault/build.sh), in that order, go in front of the server's
# LD_PRELOAD, for every library alike.
#
# qperf's server runs with shim=earlylisten: qperf 0.4.11 (Debian 12's)
# sends the client a new listener's port before it calls rdma_listen, so a
# quick client can be rejected (reason 8, no listener yet) with any library;
# qperf's repository fixed that order after 0.4.11, the shim makes it from
# outside (abi-tests/fault/earlylisten.c).
#
# Facts of the bed these settings answer (tried with Debian's library):
# ofi_rxm sizes its completion queue beyond what rxe allows unless
# FI_UNIVERSE_SIZE is small; UCX 1.13 on rxe asserts at teardown unless
# its asynchronous IB events are off, and stalls on 64 KiB messages (so
# io_demo moves at most 16 KiB). Left out, as they fail with Debian's own
# library here: io_demo's data check (-q) reports corrupt data on reads,
# and fio's send verb ends in "RNR retry counter exceeded" in 2 of 3 runs
# (the server's receives are not posted in time under emulation).
UCX_ENV="UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_TLS=rc_verbs UCX_IB_ASYNC_EVENTS=n"
CLIENTS=(
	"fi_info -p verbs|-|fi_info -p verbs|alone|^provider: verbs"
	"fi_pingpong msg|fi_pingpong -p verbs -e msg -I 100 -S 4096|fi_pingpong -p verbs -e msg -I 100 -S 4096 192.0.2.1|once|^4k +100 "
	"fi_pingpong msg IPv6|fi_pingpong -6 -p verbs -e msg -I 100 -S 4096|fi_pingpong -6 -p verbs -e msg -I 100 -S 4096 fd00::1|once|^4k +100 "
	"fi_pingpong rxm rdm|FI_UNIVERSE_SIZE=16 fi_pingpong -p verbs;ofi_rxm -e rdm -I 100 -S 4096|FI_UNIVERSE_SIZE=16 fi_pingpong -p verbs;ofi_rxm -e rdm -I 100 -S 4096 192.0.2.1|once|^4k +100 "
	"io_demo|$UCX_ENV io_demo -p 20079 -d 1024:16384|$UCX_ENV io_demo -p 20079 -i 200 -d 1024:16384 -o read,write 192.0.2.1|daemon|"
	"qperf -cm1|shim=earlylisten qperf|qperf -cm1 -t 1 192.0.2.1 rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_lat|daemon|^rc_rdma_read_lat:"
	"fio rdma write|fio --name=s --ioengine=rdma --port=20081 --rw=read --bs=4k --size=1m|fio --name=c --ioengine=rdma --hostname=192.0.2.1 --port=20081 --verb=write --rw=write --bs=4k --size=1m|once|WRITE: bw=.*io=1024KiB"
	"fio rdma read|fio --name=s --ioengine=rdma --port=20082 --rw=read --bs=4k --size=1m|fio --name=c --ioengine=rdma --hostname=192.0.2.1 --port=20082 --verb=read --rw=write --bs=4k --size=1m|once|WRITE: bw=.*io=1024KiB"
)
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-60}
CLIENT_SHIMS=${CLIENT_SHIMS:-$PWD/build/abi-tests}

run_client() { # spec env log
	local spec=$1 libenv=$2 log=$3 name scmd ccmd kind expect spid src crc from start=$SECONDS why="" senv shim
	IFS='|' read -r name scmd ccmd kind expect <<<"$spec"
	{ echo "### $name [${libenv:-system}]"; echo "### server: $scmd"; } >>"$log"
	senv=$libenv
	if [[ $scmd == shim=* ]]; then
		local names n
		IFS=, read -r -a names <<<"${scmd%% *}"
		scmd=${scmd#* } shim=""
		names[0]=${names[0]#shim=}
		for n in "${names[@]}"; do
			if [ ! -e "$CLIENT_SHIMS/$n.so" ]; then
				echo "failed ($CLIENT_SHIMS/$n.so not built: abi-tests/fault/build.sh)"
				return 1
			fi
			shim+=${shim:+:}$CLIENT_SHIMS/$n.so
		done
		if [[ " $libenv" == *" LD_PRELOAD="* ]]; then
			senv=$(sed -E "s#(^| )LD_PRELOAD=#\1LD_PRELOAD=$shim:#" <<<"$libenv")
		else
			senv="$libenv LD_PRELOAD=$shim"
		fi
	fi
	if [ "$kind" != alone ]; then
		# shellcheck disable=SC2086 # the commands are word lists
		timeout -k 2 "$CLIENT_TIMEOUT" env $senv $scmd >>"$log" 2>&1 &
		spid=$!
		sleep 2 # the server's listener (fi_pingpong and qperf listen on TCP first)
	fi
	echo "### client: $ccmd" >>"$log"
	from=$(($(wc -l <"$log") + 1))
	# shellcheck disable=SC2086
	timeout -k 2 "$CLIENT_TIMEOUT" env $libenv $ccmd >>"$log" 2>&1
	crc=$?
	if ((crc != 0)); then
		# Evidence for a failure that does not repeat (the kernel's CM ids
		# while the server still runs, the kernel's last messages).
		{ echo "### after the client's failure: rdma res show cm_id"; rdma res show cm_id 2>&1 | head -n 20
		  echo "### dmesg (last 10 lines)"; dmesg 2>&1 | tail -n 10; } >>"$log"
	fi
	if [ "$kind" = alone ]; then
		src=0
	elif [ "$kind" = daemon ]; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		src=0
	else
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$spid" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$spid" 2>/dev/null && { kill "$spid"; why="server still running 5 s after the client; "; }
		wait "$spid"
		src=$?
	fi
	if [ -n "$expect" ] && ! tail -n +"$from" "$log" | grep -qE -- "$expect"; then
		why+="the client's output lacks its result /$expect/; "
	fi
	echo "### exit: server $src client $crc ($((SECONDS - start)) s)" >>"$log"
	if ((crc == 0 && src == 0)) && [ -z "$why" ]; then echo passed; return 0; fi
	((crc == 124)) && why+="client timed out after ${CLIENT_TIMEOUT}s; "
	echo "failed (${why}server exit $src, client exit $crc)"
	return 1
}
