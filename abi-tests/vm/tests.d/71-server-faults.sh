#!/usr/bin/env bash
# 71-server-faults.sh — (guest side) faults a server meets, each case of
# build/abi-tests/server_faults (abi-tests/fault/server_faults.c) run in
# its own process with our library and with Debian's v44:
#   eintr, eintr-restart  a signal during a blocking rdma_get_cm_event,
#                         without and with SA_RESTART;
#   emfile-cold, -warm    every descriptor in use at channel and id
#                         creation, before and after the library's first
#                         use; usable again once descriptors are freed;
#   fork                  a process holding ids forks: the child's calls
#                         end, the parent keeps working;
#   netdev                rxe0's netdev down and up during resolve and
#                         under a connection; a new connection afterwards;
#   hotplug               an RDMA device added after the library listed
#                         its devices is found and used.
# (The device removed under open ids: tests.d/30-conn-diff.sh.)
# Ours is judged by the case's own checks (its "verdict" line; a crash or
# the case's 60 s guard fails it); v44's result is shown beside ours,
# line by line, as the reference. Ends with "N passed, M failed, K skipped".
# suite-timeout: 600
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
B=build/abi-tests
work_dir server-faults keep
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
case $OURS in /*) ;; *) OURS=$REPO/$OURS ;; esac
[ -x "$B/server_faults" ] || { bad "$B/server_faults not built (abi-tests/fault/build.sh runs on the host)"; finish; }
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
mkdir -p "$tmp/lib-ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/lib-ours/librdmacm.so.1"
echo "# kernel $(uname -r) ($KERNEL)"

# the bed as net-setup.sh left it (a case takes d0 down and adds rxe9)
restore_bed() {
	ip link set d0 up 2>/dev/null
	ip -6 addr replace fd00::1/64 dev d0 nodad 2>/dev/null
	rdma link delete rxe9 2>/dev/null
	ip link del d9 2>/dev/null
	for _ in $(seq 50); do rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE' && break; sleep 0.1; done
}

for c in eintr eintr-restart emfile-cold emfile-warm fork netdev hotplug; do
	for lib in ours v44; do
		env=()
		[ $lib = ours ] && env=(LD_LIBRARY_PATH="$tmp/lib-ours")
		env "${env[@]}" timeout -k 5 90 "$B/server_faults" "$c" >"$tmp/$c-$lib.txt" 2>"$tmp/$c-$lib.err"
		echo "exit $?" >>"$tmp/$c-$lib.txt"
		restore_bed
	done
	echo "# $c"
	paste -d '\n' <(grep '^result' "$tmp/$c-ours.txt" | sed 's/^result [^:]*: /#   ours: /') \
		<(grep '^result' "$tmp/$c-v44.txt" | sed 's/^result [^:]*: /#   v44:  /') | grep .
	grep '^#' "$tmp/$c-ours.txt" | sed 's/^# /#   ours: # /'
	v=$(grep "^verdict $c: " "$tmp/$c-ours.txt")
	ex=$(tail -n1 "$tmp/$c-ours.txt")
	echo "#   v44's verdict: $(grep "^verdict $c: " "$tmp/$c-v44.txt" | sed 's/^verdict [^:]*: //' || true) ($(tail -n1 "$tmp/$c-v44.txt"))"
	if [ "$v" = "verdict $c: ok" ] && [ "$ex" = "exit 0" ]; then
		ok "$c"
	else
		bad "$c: ${v#verdict $c: } ($ex$(head -c 300 "$tmp/$c-ours.err" | tr '\n' ' '))"
	fi
done
finish
