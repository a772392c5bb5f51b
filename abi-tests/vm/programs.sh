#!/usr/bin/env bash
# programs.sh — (guest side, sourced) rdma-core's programs as client/server
# pairs on the soft-RoCE bed, run with a chosen librdmacm:
#   lib_env system          Debian's installed library
#   lib_env preload:PATH    LD_PRELOAD=PATH (in front of the system library)
#   lib_env libpath:DIR     LD_LIBRARY_PATH=DIR (instead of it)
# run_pair NAME MODE reports "passed", "failed (...)" or
# "skipped (needs: ...)" when the library lacks symbols the programs import.

# name | netns of the server | server command | netns of the client | client command
PAIRS=(
	"rping|-|rping -s -a 192.0.2.1 -v -C 10|-|rping -c -a 192.0.2.1 -I 192.0.2.1 -v -C 10"
	"rping-ipv6|-|rping -s -a fd00::1 -v -C 10|-|rping -c -a fd00::1 -I fd00::1 -v -C 10"
	"ucmatose|-|ucmatose|-|ucmatose -s 192.0.2.1 -b 192.0.2.1"
	"ucmatose-100|-|ucmatose -c 100|-|ucmatose -c 100 -s 192.0.2.1 -b 192.0.2.1"
	"udaddy|-|udaddy|-|udaddy -s 192.0.2.1 -b 192.0.2.1"
	"cmtime|-|cmtime -b 192.0.2.1|-|cmtime -s 192.0.2.1 -b 192.0.2.1"
	"rdma_server/client|-|rdma_server -s 192.0.2.1|-|rdma_client -s 192.0.2.1"
	"mckey|-|mckey -m 239.1.2.3 -b 192.0.2.1 -C 5|-|mckey -m 239.1.2.3 -b 192.0.2.1 -C 20 -s"
	"ib_send_bw -R|-|ib_send_bw -R -F -d rxe0|-|ib_send_bw -R -F -d rxe0 192.0.2.1"
	"ib_send_lat -R|-|ib_send_lat -R -F -d rxe0|-|ib_send_lat -R -F -d rxe0 192.0.2.1"
	"ib_write_bw -R|-|ib_write_bw -R -F -d rxe0|-|ib_write_bw -R -F -d rxe0 192.0.2.1"
	"ib_read_lat -R|-|ib_read_lat -R -F -d rxe0|-|ib_read_lat -R -F -d rxe0 192.0.2.1"
)
# On kernels where rxe works in network namespaces, mckey's sender and
# receiver sit on two hosts. The sender sends 20 datagrams for a receiver
# that waits for 5: multicast over rxe under emulation drops the first ones
# now and then (UD has no retransmission; the receiver's attach is async).
if [ "$(cat /run/rdmacm-net-mode 2>/dev/null)" = pair ]; then
	PAIRS[7]="mckey|b|mckey -m 239.1.2.3 -b 192.0.2.2 -C 5|a|mckey -m 239.1.2.3 -b 192.0.2.1 -C 20 -s"
fi
PAIR_TIMEOUT=${PAIR_TIMEOUT:-40}

lib_env() { # mode -> env assignments
	case $1 in
	system) ;;
	preload:*) echo "LD_PRELOAD=${1#preload:}" ;;
	libpath:*) echo "LD_LIBRARY_PATH=${1#libpath:}" ;;
	esac
}

lib_file() { # mode -> library file the programs will use
	case $1 in
	system) echo /usr/lib/x86_64-linux-gnu/librdmacm.so.1 ;;
	preload:*) echo "${1#preload:}" ;;
	libpath:*) echo "${1#libpath:}/librdmacm.so.1" ;;
	esac
}

# rdmacm functions a program imports that a library does not define.
missing_symbols() { # program library
	local prog lib
	prog=$(command -v "$1") || { echo "$1(not installed)"; return; }
	lib=$2
	comm -23 \
		<(objdump -T "$prog" | awk '/\*UND\*/ { print $NF }' | grep -E '^(rdma_|r(socket|bind|listen|accept|connect|send|recv|read|write|close|poll|select|getsockopt|setsockopt|fcntl|shutdown|getpeername|getsockname|iomap|iounmap|iowrite|sendto|recvfrom|sendmsg|recvmsg|readv|writev)$|repoll_)' | sort -u) \
		<(objdump -T "$lib" | awk '!/\*UND\*/ && NF >= 7 { print $NF }' | sort -u)
}

ns_prefix() { # ns -> command prefix (nothing for the initial namespace)
	[ "$1" = - ] || echo "ip netns exec $1"
}

# Multicast over rxe loses the first exchange after a while without one
# (seen on 6.1 and 7.3 under qemu): an untimed mckey exchange with Debian's
# library right before each mckey test.
warm_up_multicast() {
	local name sns scmd cns ccmd
	IFS='|' read -r name sns scmd cns ccmd <<<"${PAIRS[7]}"
	$(ns_prefix "$sns") timeout -k 2 15 $scmd >/dev/null 2>&1 &
	sleep 4
	$(ns_prefix "$cns") timeout -k 2 15 $ccmd >/dev/null 2>&1
	wait
}

run_pair() { # "spec" mode logfile -> prints result, returns 0 pass / 1 fail / 2 skip
	local spec=$1 mode=$2 log=$3
	local name sns scmd cns ccmd
	IFS='|' read -r name sns scmd cns ccmd <<<"$spec"
	local lib miss
	lib=$(lib_file "$mode")
	if [ ! -e "$lib" ]; then echo "skipped (library not built)"; return 2; fi
	miss=$( (missing_symbols "${scmd%% *}" "$lib"; missing_symbols "${ccmd%% *}" "$lib") | sort -u | tr '\n' ' ')
	if [ -n "$miss" ]; then echo "skipped (needs: ${miss% })"; return 2; fi
	local envs
	envs=$(lib_env "$mode")
	[[ $name == mckey ]] && warm_up_multicast
	{
		echo "### $name [$mode]"
		echo "### server: $scmd"
	} >>"$log"
	# Started directly (no subshell), so that killing $spid reaches the
	# program through timeout.
	$(ns_prefix "$sns") env $envs timeout -k 2 "$PAIR_TIMEOUT" $scmd >>"$log" 2>&1 &
	local spid=$!
	# Give the server time to listen (or, for mckey, to join) under emulation.
	if [[ $name == mckey ]]; then sleep 4; else sleep 2; fi
	echo "### client: $ccmd" >>"$log"
	$(ns_prefix "$cns") env $envs timeout -k 2 "$PAIR_TIMEOUT" $ccmd >>"$log" 2>&1
	local crc=$?
	local src
	if [[ $name == cmtime ]]; then
		# The v44 cmtime server never exits: stop it once the client is done.
		sleep 1; kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; src=0
	else
		wait "$spid"; src=$?
	fi
	echo "### exit: server $src client $crc" >>"$log"
	if ((crc == 0 && src == 0)); then echo passed; return 0; fi
	echo "failed (server exit $src, client exit $crc)"
	return 1
}
