#!/usr/bin/env bash
# cm-bench-guest.sh — (guest side of make bench) CM core per-operation
# medians, Debian's librdmacm and ours interleaved in one process (see
# cm_bench.c), 5 processes of 1000 ids each, with the raw kernel floor; the
# first rdma_create_id of a process; syscalls per id lifecycle (strace,
# difference of two run lengths).
set -uo pipefail
B=build/bench/cm_bench
OURS=$PWD/build/librdmacm.so.1
DEB=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
declare -A sum
ops=(create_id bind resolve_addr resolve_route destroy)
# Both libraries in one process, each step interleaved id by id with the
# other library and with "raw" (the kernel commands upstream issues for the
# step, written with no library: the floor any library issuing the same
# commands can reach). 5 processes x 1000 ids; medians of the 5 medians.
for r in 1 2 3 4 5; do
	out=$($B ops 1000 "$DEB" "$OURS") || { echo "cm_bench failed: $out"; exit 1; }
	for o in "${ops[@]}"; do
		read -r _ u m w <<<"$(grep "^$o " <<<"$out")"
		sum[upstream.$o]+="$u "
		sum[ours.$o]+="$m "
		sum[raw.$o]+="$w "
	done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '%-16s %12s %12s %8s %10s %10s\n' operation "upstream us" "rdmacm-rs us" ratio "raw us" "raw/up"
for o in "${ops[@]}"; do
	u=$(med <<<"${sum[upstream.$o]}"); m=$(med <<<"${sum[ours.$o]}"); w=$(med <<<"${sum[raw.$o]}")
	printf '%-16s %12s %12s %8s %10s %10s\n' "$o" "$u" "$m" "$(ratio "$m" "$u")" "$w" "$(ratio "$w" "$u")"
done
# First calls in a fresh process (5 processes each, alternating, medians):
# the passive rdma_getaddrinfo with no node, then in another process
# rdma_create_id and the first rdma_bind_addr. Target: <= 0.10x.
for i in 1 2 3 4 5; do
	for lib in upstream ours; do
		e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
		out=$(env "${e[@]}" $B first; env "${e[@]}" $B first-gai)
		for k in create_id bind getaddrinfo; do
			sum[first_$k.$lib]+="$(awk -v k="first_$k" '$1 == k { print $2 }' <<<"$out") "
		done
	done
done
for k in getaddrinfo create_id bind; do
	u=$(med <<<"${sum[first_$k.upstream]}") m=$(med <<<"${sum[first_$k.ours]}")
	printf '%-16s %12s %12s %8s  %s\n' "first $k" "$u" "$m" "$(ratio "$m" "$u")" \
		"$(awk -v a="$m" -v b="$u" 'BEGIN { print (a <= 0.1 * b) ? "met (target 0.10)" : "MISS (target 0.10)" }')"
done
if command -v strace >/dev/null; then
	for lib in upstream ours; do
		e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
		c1=$(env "${e[@]}" strace -f -c -o /dev/stdout $B cycle 100 2>/dev/null | awk '/^100.00|total/ { print $4 }' | tail -n1)
		c2=$(env "${e[@]}" strace -f -c -o /dev/stdout $B cycle 300 2>/dev/null | awk '/^100.00|total/ { print $4 }' | tail -n1)
		sum[sys.$lib]=$(( (c2 - c1) / 200 ))
	done
	printf '%-16s %12s %12s\n' "syscalls per id" "${sum[sys.upstream]}" "${sum[sys.ours]}"
fi
echo "(medians of 5 processes x 1000 ids, both libraries and raw interleaved id by id, kernel $(uname -r) under qemu TCG;"
echo " ratio = rdmacm-rs / upstream; raw = upstream's kernel commands with no library, the floor for the same commands)"

# User-space instructions per id lifecycle (the five steps), callgrind:
# 300 ids minus 100 ids, so process start and library initialisation
# cancel out.
if command -v valgrind >/dev/null; then
	cg() { # lib n
		local e=() f
		[ "$1" = ours ] && e=(LD_PRELOAD="$OURS")
		f=$(mktemp /tmp/cg.XXXXXX)
		env "${e[@]}" valgrind --tool=callgrind --callgrind-out-file="$f" $B cycle "$2" >/dev/null 2>&1
		awk '/^summary:/ { print $2 }' "$f"
		rm -f "$f"
	}
	for lib in upstream ours; do
		a=$(cg $lib 100) b=$(cg $lib 300)
		sum[instr.$lib]=$(((b - a) / 200))
	done
	printf '%-16s %12s %12s %8s\n' "instr per id" "${sum[instr.upstream]}" "${sum[instr.ours]}" \
		"$(ratio "${sum[instr.ours]}" "${sum[instr.upstream]}")"
	echo "(user-space instructions per id lifecycle: create, bind, resolve addr+event, resolve route+event, destroy;"
	echo " callgrind, 300 ids minus 100 ids)"
fi

# Threads: 8 threads, each with its own channel and ids (create, bind,
# resolve address, destroy), ids per second; the libraries alternate
# round by round (9 rounds of 4 s, the order swapping every round), medians.
# One untimed round of each first: the first rounds after boot ran 5-20 %
# slower for both libraries (the kernel's caches warming up), which moved
# the median by more than the difference being measured.
for lib in upstream ours; do
	e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
	env "${e[@]}" $B threads 8 2 >/dev/null
done
for r in 1 2 3 4 5 6 7 8 9; do
	order="upstream ours"
	((r % 2 == 0)) && order="ours upstream"
	for lib in $order; do
		e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
		v=$(env "${e[@]}" $B threads 8 4 | awk '/^threads/ { print $3 }')
		sum[thr.$lib]+="${v:-0} "
	done
done
tu=$(med <<<"${sum[thr.upstream]}") to=$(med <<<"${sum[thr.ours]}")
echo
printf '%-16s %12s %12s %8s\n' "8 threads" "upstream" "rdmacm-rs" ratio
printf '%-16s %12s %12s %8s\n' "ids per second" "$tu" "$to" "$(ratio "$to" "$tu")"
echo "(8 threads x own channel, create+bind+resolve addr+destroy, 9 alternating rounds of 4 s after a warm-up, medians;"
echo " per-round values: upstream ${sum[thr.upstream]}/ ours ${sum[thr.ours]})"
