#!/usr/bin/env bash
# preload-check.sh — build/librspreload.so as a preload library must be:
# no SONAME (upstream's has none), NEEDED librdmacm.so.1, its exports
# unversioned, every call Debian's librspreload (v44) and upstream v65's
# interpose exported, and nothing else but the calls listed in
# preload/librspreload.map (no Rust or libgcc internals). Then a smoke run
# on this machine (no RDMA here: every socket falls back to an ordinary
# one, so everything must pass through unchanged): abi-tests/preload/
# smoke.py under LD_PRELOAD exercises sockets, epoll (a repoll instance
# under the preload), poll, select, dup/dup2, fcntl and sendfile; again
# with RDMAV_FORK_SAFE=1 (the fork mode, off without an RDMA device), and
# once more with a made-up RDMA device (the fork mode on, every move
# failing: TCP kept, data intact, waits bounded).
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
PRE=build/librspreload.so
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
[ -e "$PRE" ] || { bad "$PRE not built"; echo "$pass passed, $fail failed"; exit 1; }
exports() { objdump -T "$1" | awk '$0 !~ /\*UND\*/ && NF >= 7 { print $NF }' | sort -u; }

readelf -d "$PRE" | grep -q SONAME && bad "has a SONAME" || ok "no SONAME"
readelf -d "$PRE" | grep -q 'NEEDED.*\[librdmacm\.so\.1\]' && ok "NEEDED librdmacm.so.1" || bad "does not need librdmacm.so.1"
ours=$(exports "$PRE")
versioned=$(objdump -T "$PRE" | awk '$0 !~ /\*UND\*/ && NF >= 7 && $(NF-1) != "Base" { print $NF }')
[ -z "$versioned" ] && ok "exports carry no version" || bad "versioned exports: $(echo $versioned)"
map=$(sed -n 's/^[[:space:]]*\([a-z_0-9]*\);$/\1/p' preload/librspreload.map | sort -u)
[ "$ours" = "$map" ] && ok "exports exactly the $(wc -l <<<"$map") calls of librspreload.map" ||
	bad "exports differ from the map: $(comm -3 <(echo "$ours") <(echo "$map") | tr -s '\t\n' '  ')"
for ref in /usr/lib/x86_64-linux-gnu/rsocket/librspreload.so .cache/upstream/rdma-core-6[5-9]*/build/lib/librspreload.so; do
	[ -e "$ref" ] || continue
	missing=$(comm -23 <(exports "$ref") <(echo "$ours"))
	n=$(exports "$ref" | wc -l)
	[ -z "$missing" ] && ok "interposes all $n calls of $ref" || bad "lacks what $ref interposes: $(echo $missing)"
done

# Twice: as is, and with the fork mode asked for (RDMAV_FORK_SAFE=1; with
# no RDMA device here it stays off and everything passes through).
for fork in "" 1; do
	out=$(env ${fork:+RDMAV_FORK_SAFE=$fork} LD_LIBRARY_PATH=$PWD/build LD_PRELOAD=$PWD/$PRE timeout 60 \
		python3 abi-tests/preload/smoke.py 2>&1)
	rc=$?
	echo "$out" | sed 's/^/    /'
	line=$(tail -n1 <<<"$out")
	if ((rc == 0)) && [[ $line =~ ^([0-9]+)\ passed,\ 0\ failed$ ]]; then
		ok "smoke.py under the preload${fork:+ with RDMAV_FORK_SAFE=$fork} (${BASH_REMATCH[1]} checks)"
	else
		bad "smoke.py under the preload${fork:+ with RDMAV_FORK_SAFE=$fork}: exit $rc"
	fi
done

# The fork mode's failure path on this machine: in a private mount
# namespace a made-up /sys/class/infiniband entry turns the fork mode on,
# but no rsocket can be made here, so every move must fail and keep TCP
# (the client's wait for "ready" bounded by RSPRELOAD_FORK_TIMEOUT=1, the
# server keeping TCP once the client spoke), smoke.py passing unchanged.
# Needs unshare(1) with mount namespaces (root); otherwise not run.
if unshare -m true 2>/dev/null; then
	fake=$(mktemp -d)
	mkdir -p "$fake/infiniband/made-up0"
	start=$SECONDS
	out=$(unshare -m bash -c 'mount --bind "$1" /sys/class && exec env RDMAV_FORK_SAFE=1 RSPRELOAD_FORK_TIMEOUT=1 \
		RSPRELOAD_FORK_DEBUG=1 LD_LIBRARY_PATH="$2/build" LD_PRELOAD="$2/$3" timeout 60 python3 abi-tests/preload/smoke.py' \
		_ "$fake" "$PWD" "$PRE" 2>&1)
	rc=$?
	took=$((SECONDS - start))
	rm -rf "$fake"
	echo "$out" | sed 's/^/    /'
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$out" | tail -n1)
	kept=$(grep -c 'TCP kept$' <<<"$out")
	if ((rc == 0)) && [[ $line =~ ^[0-9]+\ passed,\ 0\ failed$ ]] && ((kept >= 2 && took < 30)) &&
		grep -q 'no "ready" from the peer in time' <<<"$out"; then
		ok "fork mode with no usable RDMA: every move keeps TCP ($kept), smoke.py passes, ${took}s"
	else
		bad "fork mode with no usable RDMA: exit $rc, '$line', $kept moves kept TCP, ${took}s"
	fi
else
	echo "note: fork-mode failure path not checked (unshare -m needs root)"
fi
echo "$pass passed, $fail failed"
((fail == 0))
