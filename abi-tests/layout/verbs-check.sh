#!/usr/bin/env bash
# verbs-check.sh — our hand-written include/rdma/rdma_verbs.h against
# Debian's (upstream's) <rdma/rdma_verbs.h>: gcc's -aux-info lists every
# function the upstream header declares or defines; for each, a C file
# built against OUR header asserts (_Static_assert with
# __builtin_types_compatible_p) that our function has exactly that type, so
# a missing helper or a different signature does not compile. Also: ours
# declares nothing upstream lacks (except rdmacm_rs_* internals).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=build/abi-tests
mkdir -p "$out"
pass=0 fail=0
echo '#include <rdma/rdma_verbs.h>' >"$out/verbs-probe.c"
gcc -aux-info "$out/verbs-upstream.aux" -fsyntax-only "$out/verbs-probe.c" || { echo "cannot read upstream's rdma_verbs.h"; exit 1; }
gcc -Iinclude -aux-info "$out/verbs-ours.aux" -fsyntax-only "$out/verbs-probe.c" || { echo "cannot read our rdma_verbs.h"; exit 1; }
names() { grep '/rdma/rdma_verbs.h:' "$1" | sed -E 's|^/\*[^*]*\*/ *||; s/ \(.*//; s/.*[ *]//' | grep -v '^rdmacm_rs_' | sort -u; }
gen=$out/verbs-types.c
{
	echo '#include <rdma/rdma_verbs.h>'
	grep '/rdma/rdma_verbs.h:' "$out/verbs-upstream.aux" | sed -E 's|^/\*[^*]*\*/ *||; s/^(static|extern) +//; s/;.*//' |
		while IFS= read -r proto; do
			name=$(sed -E 's/ \(.*//; s/.*[ *]//' <<<"$proto")
			type=$(sed -E "s/$name \\(/(*)(/" <<<"$proto")
			echo "_Static_assert(__builtin_types_compatible_p(__typeof__(&$name), $type), \"$name: type differs from upstream's\");"
		done
	echo 'int main(void) { return 0; }'
} >"$gen"
n=$(names "$out/verbs-upstream.aux" | wc -l)
if ((n >= 19)) && cc -Wall -Wextra -Werror -Iinclude -o "$out/verbs-types" "$gen"; then
	echo "rdma_verbs.h: $n functions, each with upstream's exact type"
	pass=$((pass + n))
else
	echo "FAIL: rdma_verbs.h types differ from upstream's (or only $n functions found)"
	fail=$((fail + 1))
fi
extra=$(comm -13 <(names "$out/verbs-upstream.aux") <(names "$out/verbs-ours.aux"))
if [ -z "$extra" ]; then pass=$((pass + 1)); else echo "FAIL: ours declares what upstream does not: $extra"; fail=$((fail + 1)); fi
for std in "cc -x c" "c++ -x c++"; do
	if $std -fsyntax-only -Wall -Wextra -Werror -Iinclude - <<<"#include <rdma/rdma_verbs.h>
#include <rdma/rdma_verbs.h>"; then pass=$((pass + 1)); else echo "FAIL: rdma_verbs.h standalone ($std)"; fail=$((fail + 1)); fi
done
echo "$pass passed, $fail failed"
((fail == 0))
