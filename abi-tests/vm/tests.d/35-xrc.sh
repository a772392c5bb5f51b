#!/usr/bin/env bash
# 35-xrc.sh — (guest side) rdma_xserver/rdma_xclient, the sync-endpoint
# examples with RC (-c r) and XRC (-c x) QPs, with Debian's librdmacm and
# with ours (LD_LIBRARY_PATH). rxe has no XRC: in XRC mode both libraries
# must fail the same way (same exit codes, same messages); in RC mode both
# must pass. The same for v65's rdma_xserver/rdma_xclient built from source
# against our headers and library (abi-tests/srccompat/build.sh), run on
# ours: RC must pass, XRC must fail with Debian's exit codes (their
# messages are v65's, not compared).
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure.
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
EMPTY_EXIT=0
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
work_dir xrc
command -v rdma_xserver >/dev/null || { skp "no rdma_xserver"; EMPTY_EXIT=77; finish; }
mkdir -p "$tmp/lib" && ln -sf "$(readlink -f "$OURS")" "$tmp/lib/librdmacm.so.1"

SRC=$PWD/build/srccompat
src_ok=1
for p in rdma_xserver rdma_xclient; do
	[ -x "$SRC/$p" ] && continue
	src_ok=0
	why=$(cat "$SRC/$p.needs" "$SRC/$p.why" "$SRC/nolib" 2>/dev/null | head -n1)
	echo "SKIP built from source: $p not built (${why:-abi-tests/srccompat/build.sh did not run})"
	skip=$((skip + 2))
done

# Each run listens on a port of its own (7500, 7501, ...), so that no
# request can meet what the kernel still holds of the previous run's
# listener on the same port (a precaution: the cause of the reference's
# hang below is not known).
PORT=7499
run() { # lib type port -> "server-exit client-exit" and $tmp/<lib>-<type>.{server,client}
	local lib=$1 t=$2 port=$3 e=() spid src crc i dir=""
	[ "$lib" = system ] || e=(LD_LIBRARY_PATH="$tmp/lib")
	[ "$lib" = src ] && dir=$SRC/
	env "${e[@]}" timeout 30 ${dir}rdma_xserver -c "$t" -p "$port" >"$tmp/$lib-$t.server" 2>&1 &
	spid=$!
	for ((i = 0; i < 50; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*:$port " && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.2
	done
	env "${e[@]}" timeout 30 ${dir}rdma_xclient -s 192.0.2.1 -c "$t" -p "$port" >"$tmp/$lib-$t.client" 2>&1
	crc=$?
	for ((i = 0; i < 25; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.2; done
	kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	echo "$src $crc"
}
for t in r x; do
	PORT=$((PORT + 1))
	read -r ds dc < <(run system $t $PORT)
	if ((ds == 124 && dc == 124)); then
		# Debian's library, the reference, hung on both sides (seen once
		# in a full run, 6.1 guest, 2026-11-27): shown, and run again
		# once. Our library gets no second try.
		echo "# Debian's run (-c $t) timed out on both sides (server said: $(tr '\n' ';' <"$tmp/system-$t.server") client said: $(tr '\n' ';' <"$tmp/system-$t.client")); run again once"
		PORT=$((PORT + 1))
		read -r ds dc < <(run system $t $PORT)
	fi
	PORT=$((PORT + 1))
	read -r os oc < <(run ours $t $PORT)
	d="server exit $ds, client exit $dc"
	o="server exit $os, client exit $oc"
	if ((src_ok)); then
		PORT=$((PORT + 1))
		read -r ss sc < <(run src $t $PORT)
		s="server exit $ss, client exit $sc"
		if [ $t = r ] && ((ss == 0 && sc == 0)); then
			ok "rdma_xserver/xclient RC, built from v65's source against our headers: passes on ours"
		elif [ $t = r ]; then
			bad "rdma_xserver/xclient RC, built from v65's source against our headers: $s; it said: $(tr '\n' ';' <"$tmp/src-$t.client")"
		elif [ "$s" = "$d" ] && ((ds != 0 || dc != 0)); then
			ok "rdma_xserver/xclient XRC, built from v65's source against our headers: fails on ours as Debian's build on Debian's library ($s: $(grep -v ': start$' "$tmp/src-$t.server" | tr '\n' ';') / $(grep -v ': start$' "$tmp/src-$t.client" | tr '\n' ';'))"
		else
			bad "rdma_xserver/xclient XRC, built from v65's source against our headers: $s, Debian's: $d"
		fi
	fi
	if [ $t = r ]; then
		if ((ds == 0 && dc == 0 && os == 0 && oc == 0)); then
			ok "rdma_xserver/xclient RC: passes with Debian's library and with ours"
		else
			bad "rdma_xserver/xclient RC: Debian's: $d; ours: $o; ours said: $(tr '\n' ';' <"$tmp/ours-$t.client")"
		fi
		continue
	fi
	if ((ds == 0 && dc == 0)); then
		bad "rdma_xserver/xclient XRC: passes with Debian's library on this bed ($d): expected rxe to lack XRC"
	elif [ "$d" = "$o" ] && diff -q "$tmp/system-$t.server" "$tmp/ours-$t.server" >/dev/null &&
		diff -q "$tmp/system-$t.client" "$tmp/ours-$t.client" >/dev/null; then
		ok "rdma_xserver/xclient XRC: not supported by rxe, the same failure with both libraries ($d: $(grep -v ': start$' "$tmp/ours-$t.server" | tr '\n' ';') / $(grep -v ': start$' "$tmp/ours-$t.client" | tr '\n' ';'))"
	else
		bad "rdma_xserver/xclient XRC: Debian's: $d; ours: $o"
		for f in system-$t.server ours-$t.server system-$t.client ours-$t.client; do
			echo "   $f: $(tr '\n' ';' <"$tmp/$f")"
		done
	fi
done
finish
