#!/usr/bin/env bash
# build.sh — (host side) source compatibility: rdma-core v65's librdmacm
# example programs (rping, ucmatose, udaddy, mckey, cmtime,
# rdma_client/rdma_server, rdma_xclient/rdma_xserver), compiled at test
# time from the unpacked v65 source (abi-tests/upstream/build-v65.sh; never
# committed) against OUR headers (include/ comes first: rdma/rdma_cma.h,
# rdma/rdma_verbs.h, infiniband/ib.h) and linked against OUR library
# (build/librdmacm.so). rdma/rsocket.h, which the examples' common.h
# includes for the rsocket demos, and infiniband/verbs.h come from the
# system (Debian's -dev packages); cmtime's ccan/ headers and config.h from
# the v65 tree (config.h through -iquote only, so no rdma/ header of v65 is
# seen). The compiler's dependency list of each program is checked: a
# program that read rdma_cma.h, rdma_verbs.h or ib.h from anywhere but our
# include/ counts as not built.
#
# Output in build/srccompat/: <program> (the binaries), build.log, and per
# program that did not build one marker the VM matrix (suite.sh) reads:
#   <program>.needs  symbols our library lacks (the link failed on them):
#                    "skipped (needs: ...)"
#   <program>.why    any other reason: "failed (does not build: ...)"
# and nolib when build/librdmacm.so is missing (nothing built: every cell
# "skipped (library not built)"). Exit 0 in all those cases (vm-test.sh
# must still boot); exit 1 only without the rdma-core source tree.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=build/srccompat
rm -rf "$out" && mkdir -p "$out/obj"
S=$(ls -d .cache/upstream/rdma-core-6[5-9]* .cache/upstream/rdma-core-[7-9]* 2>/dev/null | head -n1)
[ -n "$S" ] && [ -d "$S/librdmacm/examples" ] || { echo "srccompat: no rdma-core source (run abi-tests/upstream/build-v65.sh)"; exit 1; }
LIB=${SRCCOMPAT_LIB:-build/librdmacm.so} # (another library: for testing this script)
if [ ! -e "$LIB" ]; then
	echo "$LIB missing (run make)" >"$out/nolib"
	echo "srccompat: $LIB missing (run make): nothing built"
	exit 0
fi
EX=$S/librdmacm/examples
CFLAGS=(-O2 -g -Wno-unused-result -Iinclude -iquote "$S/build/include" -I"$S")
log=$out/build.log
: >"$log"
built=() needs=() broken=()

# Why a program did not build, on one line (no '|': it goes into a table).
first_error() { grep -m1 -E 'error|undefined' "$1" | sed -E 's|^[^ ]*/||; s/\|/\//g' | cut -c1-160; }

for p in rping:rping cmatose:ucmatose udaddy:udaddy mckey:mckey cmtime:cmtime rdma_client:rdma_client \
	rdma_server:rdma_server rdma_xclient:rdma_xclient rdma_xserver:rdma_xserver; do
	src=${p%%:*} prog=${p##*:}
	plog=$out/obj/$prog.log
	echo "### $prog ($EX/$src.c)" >"$plog"
	if ! cc "${CFLAGS[@]}" -MD -MF "$out/obj/$prog.d" -c -o "$out/obj/$prog.o" "$EX/$src.c" >>"$plog" 2>&1 ||
		! cc "${CFLAGS[@]}" -MD -MF "$out/obj/$prog-common.d" -c -o "$out/obj/$prog-common.o" "$EX/common.c" >>"$plog" 2>&1; then
		echo "does not compile: $(first_error "$plog")" >"$out/$prog.why"
	else
		# Which rdma/ and infiniband/ headers the preprocessor really read.
		wrong=$(cat "$out/obj/$prog.d" "$out/obj/$prog-common.d" | tr ' \\' '\n\n' |
			grep -E '(^|/)(rdma/rdma_cma\.h|rdma/rdma_verbs\.h|infiniband/ib\.h)$' | grep -v '^include/' | sort -u | tr '\n' ' ')
		if [ -n "$wrong" ]; then
			echo "read ${wrong% } instead of ours" >"$out/$prog.why"
		elif ! cc -o "$out/$prog" "$out/obj/$prog.o" "$out/obj/$prog-common.o" "$LIB" -libverbs -lpthread >>"$plog" 2>&1; then
			miss=$(grep -oE "undefined reference to \`[^']+'" "$plog" | sed -E "s/.*\`//; s/'$//" | sort -u | tr '\n' ' ')
			if [ -n "$miss" ]; then
				echo "${miss% }" >"$out/$prog.needs"
			else
				echo "does not link: $(first_error "$plog")" >"$out/$prog.why"
			fi
		elif ! readelf -d "$out/$prog" | grep -q 'NEEDED.*\[librdmacm\.so\.1\]'; then
			echo "linked without librdmacm.so.1" >"$out/$prog.why"
		fi
	fi
	cat "$plog" >>"$log"
	if [ -e "$out/$prog.needs" ]; then
		rm -f "$out/$prog"
		needs+=("$prog (needs: $(cat "$out/$prog.needs"))")
	elif [ -e "$out/$prog.why" ]; then
		rm -f "$out/$prog"
		broken+=("$prog ($(cat "$out/$prog.why"))")
		echo "### $prog: $(cat "$out/$prog.why")" >>"$log"
	else
		built+=("$prog")
	fi
done
echo "srccompat: ${#built[@]} of 9 programs built from rdma-core ${S##*-}'s source against our headers and library"
((${#needs[@]})) && printf '  not linked, our library lacks symbols: %s\n' "${needs[@]}"
((${#broken[@]})) && printf '  does not build: %s\n' "${broken[@]}"
exit 0
