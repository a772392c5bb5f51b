#!/usr/bin/env bash
# rsocket-examples.sh — (host; a step of `make test`) rdma-core v65's
# rsocket example programs (rstream, riostream, rcopy, udpong), compiled
# from the unpacked v65 source against OUR headers (include/ first:
# rdma/rsocket.h, rdma/rdma_cma.h) and linked against OUR library — the
# rsocket half of "every upstream example compiles against the installed
# headers" (build.sh does the connection-manager examples, which the VM
# matrix then runs). The compiler's dependency list must show that
# rsocket.h and rdma_cma.h came from include/. Nothing is run here: the
# VM suite runs Debian's binaries of the same programs against ours
# (tests.d/60, 64). Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
S=$(ls -d .cache/upstream/rdma-core-6[5-9]* .cache/upstream/rdma-core-[7-9]* 2>/dev/null | head -n1)
[ -n "$S" ] && [ -d "$S/librdmacm/examples" ] || { echo "no rdma-core source (abi-tests/upstream/build-v65.sh)"; echo "0 passed, 1 failed"; exit 1; }
EX=$S/librdmacm/examples
out=build/srccompat-rs
rm -rf "$out" && mkdir -p "$out"
pass=0 fail=0
for prog in rstream riostream rcopy udpong; do
	log=$out/$prog.log
	if ! cc -O2 -Wno-unused-result -Iinclude -iquote "$S/build/include" -I"$S" -MD -MF "$out/$prog.d" \
		-o "$out/$prog" "$EX/$prog.c" "$EX/common.c" build/librdmacm.so -libverbs -lpthread >"$log" 2>&1; then
		echo "FAIL $prog does not build against our headers and library: $(grep -m1 -E 'error|undefined' "$log")"
		fail=$((fail + 1))
		continue
	fi
	read_hdrs=$(tr ' \\' '\n\n' <"$out/$prog.d" | grep -E '(^|/)rdma/(rsocket|rdma_cma)\.h$' | sort -u | tr '\n' ' ')
	if [[ $read_hdrs == *include/rdma/rsocket.h* ]] && ! tr ' ' '\n' <<<"$read_hdrs" | grep -E 'rdma/(rsocket|rdma_cma)\.h$' | grep -qv '^include/'; then
		if readelf -d "$out/$prog" | grep -q 'NEEDED.*librdmacm.so.1'; then
			echo "ok   $prog: built from $S against include/ (${read_hdrs% }), linked to ours"
			pass=$((pass + 1))
		else
			echo "FAIL $prog: not linked to librdmacm.so.1"; fail=$((fail + 1))
		fi
	else
		echo "FAIL $prog read ${read_hdrs% } (want include/rdma/rsocket.h and include/rdma/rdma_cma.h only)"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
((fail == 0))
