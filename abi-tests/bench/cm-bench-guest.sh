#!/usr/bin/env bash
# cm-bench-guest.sh — (guest side of make bench) CM core per-operation
# medians, Debian's librdmacm and ours alternating in one boot, 5 rounds of
# 1000 ids each; the first rdma_create_id of a process; syscalls per id
# lifecycle (strace, difference of two run lengths).
set -uo pipefail
B=build/bench/cm_bench
OURS=$PWD/build/librdmacm.so.1
declare -A sum
ops=(create_id bind resolve_addr resolve_route destroy)
for r in 1 2 3 4 5; do
	for lib in upstream ours; do
		e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
		line=$(env "${e[@]}" $B ops 1000) || { echo "cm_bench failed ($lib)"; exit 1; }
		for o in "${ops[@]}"; do
			v=$(awk -v k="$o" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<<"$line")
			sum[$lib.$o]+="$v "
		done
	done
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '%-16s %12s %12s %8s\n' operation "upstream us" "rdmacm-rs us" ratio
for o in "${ops[@]}"; do
	u=$(med <<<"${sum[upstream.$o]}"); m=$(med <<<"${sum[ours.$o]}")
	printf '%-16s %12s %12s %8s\n' "$o" "$u" "$m" "$(awk -v a="$m" -v b="$u" 'BEGIN { printf "%.2f", a / b }')"
done
for lib in upstream ours; do
	e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
	f=""; for i in 1 2 3 4 5; do f+="$(env "${e[@]}" $B first | awk '{ print $2 }') "; done
	sum[first.$lib]=$(med <<<"$f")
done
printf '%-16s %12s %12s %8s\n' "first create_id" "${sum[first.upstream]}" "${sum[first.ours]}" \
	"$(awk -v a="${sum[first.ours]}" -v b="${sum[first.upstream]}" 'BEGIN { printf "%.2f", a / b }')"
if command -v strace >/dev/null; then
	for lib in upstream ours; do
		e=(); [ $lib = ours ] && e=(LD_PRELOAD="$OURS")
		c1=$(env "${e[@]}" strace -f -c -o /dev/stdout $B ops 100 2>/dev/null | awk '/^100.00|total/ { print $4 }' | tail -n1)
		c2=$(env "${e[@]}" strace -f -c -o /dev/stdout $B ops 300 2>/dev/null | awk '/^100.00|total/ { print $4 }' | tail -n1)
		sum[sys.$lib]=$(( (c2 - c1) / 200 ))
	done
	printf '%-16s %12s %12s\n' "syscalls per id" "${sum[sys.upstream]}" "${sum[sys.ours]}"
fi
echo "(medians of 5 rounds x 1000 ids, kernel $(uname -r) under qemu TCG; ratio = rdmacm-rs / upstream)"
