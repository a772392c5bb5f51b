#!/usr/bin/env bash
# verbs-check.sh — our hand-written include/rdma/rdma_verbs.h (and the
# function prototypes of the generated rdma_cma.h) against rdma-core's:
#  1. types: gcc's -aux-info lists every function the reference header
#     declares or defines; for each, a C file built against OUR headers
#     asserts (_Static_assert with __builtin_types_compatible_p) that ours
#     has exactly that type, so a missing function or a different signature
#     does not compile. References: Debian's <rdma/rdma_verbs.h> and
#     <rdma/rdma_cma.h>, and v65's rdma_cma.h (RDMACM_1.4 functions) when
#     the v65 tree is there (abi-tests/upstream/build-v65.sh). Ours declares
#     nothing rdma-core's rdma_verbs.h lacks (except rdmacm_rs_* internals).
#  2. standalone: rdma_verbs.h included twice, as C and as C++.
#  3. behaviour: verbs/helpers.c fills a table of the 19 functions once
#     against our header (as C, and again as C++) and once against Debian's;
#     verbs/behave.c runs both through fake verbs objects and compares what
#     they pass to libibverbs, their return values and errno, built -O0 and
#     -O2 (the program links against build/librdmacm.so for the SRQ
#     functions).
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
out=build/abi-tests
mkdir -p "$out"
pass=0 fail=0
ok() { pass=$((pass + ${1:-1})); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# Functions (declared or defined) in HEADER's aux-info lines: "name<TAB>prototype".
protos() { # aux-file header-basename
	grep "/$2:" "$1" | sed -E 's|^/\*[^*]*\*/ *||; s/^(static|extern) +//; s/;.*//' |
		while IFS= read -r proto; do
			printf '%s\t%s\n' "$(sed -E 's/ \(.*//; s/.*[ *]//' <<<"$proto")" "$proto"
		done | sort -u
}
# Asserts that every function of REF-AUX's HEADER has the same type in ours.
same_types() { # label include-line ref-aux header-basename min-count
	local label=$1 inc=$2 aux=$3 hdr=$4 min=$5 gen n
	gen=$out/types-${label//[^a-z0-9]/_}.c
	{
		echo "$inc"
		protos "$aux" "$hdr" | while IFS=$'\t' read -r name proto; do
			echo "_Static_assert(__builtin_types_compatible_p(__typeof__(&$name), $(sed -E "s/$name \\(/(*)(/" <<<"$proto")), \"$name: type differs from $label\");"
		done
	} >"$gen"
	n=$(protos "$aux" "$hdr" | wc -l)
	if ((n >= min)) && cc -Wall -Wextra -Werror -Iinclude -fsyntax-only "$gen"; then
		echo "$hdr: $n functions, each with the type $label gives it"
		ok "$n"
	else
		bad "$hdr: types differ from $label's (or only $n functions found, expected >= $min)"
	fi
}

echo '#include <rdma/rdma_verbs.h>' >"$out/verbs-probe.c"
gcc -aux-info "$out/verbs-upstream.aux" -fsyntax-only "$out/verbs-probe.c" || { bad "cannot read Debian's rdma_verbs.h"; echo "$pass passed, $fail failed"; exit 1; }
gcc -Iinclude -aux-info "$out/verbs-ours.aux" -fsyntax-only "$out/verbs-probe.c" || { bad "cannot read our rdma_verbs.h"; echo "$pass passed, $fail failed"; exit 1; }

# 1. types
same_types "Debian's rdma_verbs.h" '#include <rdma/rdma_verbs.h>' "$out/verbs-upstream.aux" rdma_verbs.h 19
same_types "Debian's rdma_cma.h" '#include <rdma/rdma_cma.h>' "$out/verbs-upstream.aux" rdma_cma.h 40
S=$(ls -d .cache/upstream/rdma-core-6[5-9]* .cache/upstream/rdma-core-[7-9]* 2>/dev/null | head -n1)
if [ -n "$S" ] && [ -e "$S/build/include/rdma/rdma_cma.h" ]; then
	gcc -I"$S/build/include" -aux-info "$out/cma-v65.aux" -fsyntax-only "$out/verbs-probe.c" &&
		same_types "rdma-core ${S##*-}'s rdma_cma.h" '#include <rdma/rdma_cma.h>' "$out/cma-v65.aux" rdma_cma.h 43 ||
		bad "cannot read $S's rdma_cma.h"
else
	echo "note: no rdma-core v65 tree: rdma_cma.h compared with Debian's only"
fi
# rsocket.h: every function of Debian's (v44: the 27 rsocket functions)
# with the same type in ours.
echo '#include <rdma/rsocket.h>' >"$out/rsocket-probe.c"
if gcc -aux-info "$out/rsocket-upstream.aux" -fsyntax-only "$out/rsocket-probe.c"; then
	same_types "Debian's rsocket.h" '#include <rdma/rsocket.h>' "$out/rsocket-upstream.aux" rsocket.h 27
else
	bad "cannot read Debian's rsocket.h"
fi
# and v65's (the 27 plus repoll_create/ctl/wait of RDMACM_1.5)
if [ -n "$S" ] && [ -e "$S/build/include/rdma/rsocket.h" ]; then
	gcc -I"$S/build/include" -aux-info "$out/rsocket-v65.aux" -fsyntax-only "$out/rsocket-probe.c" &&
		same_types "rdma-core ${S##*-}'s rsocket.h" '#include <rdma/rsocket.h>' "$out/rsocket-v65.aux" rsocket.h 30 ||
		bad "cannot read $S's rsocket.h"
fi
for std in "cc -x c" "c++ -x c++"; do
	if $std -fsyntax-only -Wall -Wextra -Werror -Iinclude - <<<"#include <rdma/rsocket.h>
#include <rdma/rsocket.h>"; then ok; else bad "rsocket.h standalone ($std)"; fi
done
extra=$(comm -13 <(protos "$out/verbs-upstream.aux" rdma_verbs.h | cut -f1) \
	<(protos "$out/verbs-ours.aux" rdma_verbs.h | cut -f1 | grep -v '^rdmacm_rs_'))
if [ -z "$extra" ]; then ok; else bad "our rdma_verbs.h declares what rdma-core's does not: $extra"; fi

# 2. standalone, twice included
for std in "cc -x c" "cc -x c -std=c99" "c++ -x c++"; do
	if $std -fsyntax-only -Wall -Wextra -Werror -Iinclude - <<<"#include <rdma/rdma_verbs.h>
#include <rdma/rdma_verbs.h>"; then ok; else bad "rdma_verbs.h standalone ($std)"; fi
done

# 3. behaviour, ours next to Debian's
V=abi-tests/layout/verbs
[ -e build/librdmacm.so ] || bad "build/librdmacm.so missing (run make): behaviour not compared"
for variant in "-O0 c" "-O2 c" "-O2 c++"; do
	read -r opt lang <<<"$variant"
	b=$out/verbs$opt-$lang
	mkdir -p "$b"
	W="-Wall -Wextra -Werror $opt -g"
	case $lang in c) ours_cc="cc -x c" ;; c++) ours_cc="c++ -x c++" ;; esac
	if $ours_cc $W -c -I$V -Iinclude -DTABLE=ours_table -DTABLE_NAME='"ours"' -o "$b/ours.o" $V/helpers.c &&
		cc $W -c -I$V -DTABLE=upstream_table -DTABLE_NAME='"rdma-core"' -o "$b/upstream.o" $V/helpers.c &&
		cc $W -c -Iinclude -o "$b/behave.o" $V/behave.c &&
		cc -o "$b/behave" "$b/behave.o" "$b/ours.o" "$b/upstream.o" build/librdmacm.so -libverbs; then
		r=$("$b/behave")
		rc=$?
		line=$(tail -n1 <<<"$r")
		grep -v '^[0-9]* passed' <<<"$r"
		if ((rc == 0)) && [[ $line =~ ^([0-9]+)\ passed,\ 0\ failed$ ]]; then
			echo "helpers ($opt, ours as $lang): ${BASH_REMATCH[1]} cases behave like rdma-core's"
			ok "${BASH_REMATCH[1]}"
		else
			bad "helpers ($opt, ours as $lang): $line (exit $rc)"
		fi
	else
		bad "helpers ($opt, ours as $lang): do not build"
	fi
done
echo "$pass passed, $fail failed"
((fail == 0))
