#!/usr/bin/env bash
# 81-clients.sh — (guest side) third-party programs over librdmacm
# (abi-tests/vm/clients.sh: libfabric's verbs provider with fi_info and fi_pingpong
# over IPv4, IPv6 and ofi_rxm; UCX's io_demo over its rdmacm connection
# manager; qperf -cm1 rc_bw/rc_lat/rc_rdma_write_bw/rc_rdma_read_lat; fio's
# rdma ioengine with the write and read verbs; libfabric, qperf and fio once
# more as rebuilt from source against our headers): each pair with ours
# through LD_LIBRARY_PATH and through LD_PRELOAD (only with
# SUITE_ALL_KERNELS=1 or CLIENTS_PRELOAD=1: the time budget). Debian's
# library is the bed's baseline: for Debian's builds it runs only when ours
# failed (the table says "not run (ours passed)" otherwise), for the
# rebuilt ones always, first (our headers on Debian's library). A pair
# that fails with Debian's own library is reported as such and its cells
# for ours are skipped, not counted. The
# installed packages run the same pairs in tests.d/80-package.sh (6.1).
# Then qperf's own race made to happen (its listen delayed), and shown
# closed by the shim the qperf pairs run with (clients.sh).
# The table goes to $OUT/clients-$KERNEL.md. Kernel 7.3 only (the suite's
# time budget; 6.1 runs the package test).
# suite-timeout: 600
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
EMPTY_EXIT=0
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
if [[ $KERNEL == 6.1* ]]; then
	skp "third-party clients run on the newer kernel only (time budget; 6.1 runs them on the installed packages)"
	finish
fi
if [ ! -e "$OURS" ]; then
	skp "library not built ($OURS)"
	finish
fi
work_dir clients keep
source abi-tests/vm/clients.sh
[ -e "$CLIENT_SHIMS/earlylisten.so" ] || bad "qperf's server shim $CLIENT_SHIMS/earlylisten.so is not built (abi-tests/fault/build.sh)"
log=$tmp/clients.log
table=$OUT/clients-$KERNEL.md
{
	echo "Third-party clients on kernel $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC') ($OURS)"
	echo
	echo "| client | Debian's librdmacm | rdmacm-rs via LD_PRELOAD | rdmacm-rs via LD_LIBRARY_PATH |"
	echo "|---|---|---|---|"
} >"$table"
# The same pairs with qperf and fio rebuilt from Debian's source against
# our headers and library (abi-tests/srccompat/clients.sh, a host step):
# on Debian's library too, as their headers are meant to be the same ABI.
B=$PWD/build/clients-src
REBUILT=()
sub() { sed -E "s#(^| )$prog( |\$)#\1$dir/$prog\2#" <<<"$1"; } # the program's word -> its rebuilt path
for spec in "${CLIENTS[@]}"; do
	IFS='|' read -r name scmd ccmd kind expect <<<"$spec"
	case $name in
	qperf* | fio*) prog=${name%% *} dir=$B/bin ;;
	fi_*) prog=${name%% *} dir=$B/inst/bin ;; # libfabric, with its own libfabric.so
	*) continue ;;
	esac
	[ -x "$dir/$prog" ] || { skp "$name: $dir/$prog not built (abi-tests/srccompat/clients.sh)"; continue; }
	REBUILT+=("$name, built against our headers|$(sub "$scmd")|$(sub "$ccmd")|$kind|$expect")
done
# Debian's builds: ours first, Debian's library only when ours fails (the
# baseline then decides whether that failure is the bed's). The rebuilt
# ones: Debian's library first, always (a program built from our headers
# that runs on Debian's library is itself a check of the headers).
n_orig=${#CLIENTS[@]} i=0
for spec in "${CLIENTS[@]}" "${REBUILT[@]}"; do
	name=${spec%%|*}
	i=$((i + 1))
	ours_lp="" # ours through LD_LIBRARY_PATH, when it ran first
	((i <= n_orig)) && ours_lp=$(run_client "$spec" "LD_LIBRARY_PATH=$(dirname "$OURS")" "$log")
	if [ "$ours_lp" = passed ]; then
		base="not run (ours passed)"
	else
		base=$(run_client "$spec" "" "$log")
		if [ "$base" != passed ]; then
			skp "$name: fails with Debian's own library ($base${ours_lp:+; ours: $ours_lp}): not counted for ours"
			echo "| $name | $base | not run | ${ours_lp:-not run} |" >>"$table"
			continue
		fi
	fi
	row="| $name | $base"
	for mode in "LD_PRELOAD=$OURS" "LD_LIBRARY_PATH=$(dirname "$OURS")"; do
		# Through LD_PRELOAD only with SUITE_ALL_KERNELS=1 or CLIENTS_PRELOAD=1
		# (make test's time budget; the program matrix runs both ways).
		if [[ $mode == LD_PRELOAD=* && -z ${SUITE_ALL_KERNELS:-}${CLIENTS_PRELOAD:-} ]]; then
			row+=" | not run"
			continue
		fi
		if [[ $mode == LD_LIBRARY_PATH=* && -n $ours_lp ]]; then
			r=$ours_lp
		else
			r=$(run_client "$spec" "$mode" "$log")
		fi
		if [ "$r" = passed ]; then
			ok "$name with ${mode%%=*}=ours"
		else
			bad "$name with ${mode%%=*}=ours: $r"
			grep -n "### $name \[$mode\]" "$log" | tail -n1 | cut -d: -f1 |
				while read -r n; do tail -n +"$n" "$log" | head -n 70 | sed 's/^/     /'; done
		fi
		row+=" | $r"
	done
	echo "$row |" >>"$table"
done
cat "$table"

# qperf's own race (README, "the programs' own races"; clients.sh): its
# server sends the port before it calls rdma_listen. With that listen 3 s
# late (slowlisten.so, SLOWLISTEN_NTH=1: the first listen of each forked
# test server) the client must be rejected, over Debian's library and over
# ours; with earlylisten.so in front, as in the pairs above, the same late
# listen comes before the port is sent and the pair must pass.
for lib in "" "LD_LIBRARY_PATH=$(dirname "$OURS")"; do
	who=${lib:+ours}
	who=${who:-Debian\'s library}
	qlog=$tmp/qperf-race-${lib:+ours}.log
	r=$(run_client "qperf race|shim=slowlisten SLOWLISTEN_NTH=1 qperf|qperf -cm1 -t 1 192.0.2.1 rc_lat|daemon|^rc_lat:" "$lib" "$qlog")
	if [ "$r" != passed ] && grep -q 'Event rejected' "$qlog" && grep -q 'slowlisten: the chosen' "$qlog"; then
		ok "qperf's race reproduced over $who: with its listen late, the client is rejected"
	else
		bad "qperf's race not reproduced over $who ($r): $(grep -E 'slowlisten|rejected|rc_lat' "$qlog" | tr '\n' ' ')"
	fi
	qlog=$tmp/qperf-listen-first-${lib:+ours}.log
	r=$(run_client "qperf race, listen first|shim=earlylisten,slowlisten SLOWLISTEN_NTH=1 qperf|qperf -cm1 -t 1 192.0.2.1 rc_lat|daemon|^rc_lat:" "$lib" "$qlog")
	if [ "$r" = passed ] && grep -q 'slowlisten: the chosen' "$qlog"; then
		ok "qperf with earlylisten.so over $who: the late listen comes before the port, the pair passes"
	else
		bad "qperf with earlylisten.so over $who, listen late: $r"
	fi
done
finish
