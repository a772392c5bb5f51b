#!/usr/bin/env bash
# symbols.sh — check the exported ABI of build/librdmacm.so.1 on the binary:
# - SONAME librdmacm.so.1, NEEDED libibverbs.so.1, file name level matches
#   the newest version node that carries a function;
# - version definitions RDMACM_1.0 .. RDMACM_1.5 with upstream's parent chain;
# - every exported function is one of upstream's, under upstream's node
#   (read from Debian's librdmacm.so.1, and from upstream v65 for the 1.4/1.5
#   nodes when RDMACM_V65_LIB points at it);
# - nothing else is exported (no Rust internals).
# Prints one line per check and "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-build/librdmacm.so.1}
DEB=${RDMACM_DEBIAN_LIB:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
V65=${RDMACM_V65_LIB:-}
if [ -z "$V65" ] && [ -f .cache/upstream/v65-libdir ]; then V65=$(cat .cache/upstream/v65-libdir)/librdmacm.so.1; fi
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

[ -e "$LIB" ] || { echo "FAIL $LIB not built"; echo "0 passed, 1 failed"; exit 1; }
real=$(readlink -f "$LIB")

soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librdmacm.so.1 ] && ok "SONAME $soname" || bad "SONAME is '$soname'"
readelf -d "$LIB" | grep -q 'NEEDED.*\[libibverbs.so.1\]' && ok "NEEDED libibverbs.so.1" || bad "libibverbs.so.1 not NEEDED"

# name@@NODE for every defined dynamic symbol.
exports() { objdump -T "$1" | awk '$2 != "*UND*" && $0 !~ /\*UND\*/ && NF >= 7 { print $NF "@" $(NF-1) }' | sort -u; }
ours=$(exports "$LIB")
upstream=$(exports "$DEB"; [ -n "$V65" ] && exports "$V65")

funcs=0
for s in $ours; do
	name=${s%@*} node=${s#*@}
	if [[ $name == RDMACM_1.* ]]; then
		[ "$name" = "$node" ] || bad "version symbol $s"
		continue
	fi
	funcs=$((funcs + 1))
	want=$(printf '%s\n' $upstream | awk -F@ -v n="$name" '$1 == n { print $2; exit }')
	if [ -z "$want" ]; then
		bad "exports $name ($node), which upstream does not have"
	elif [ "$want" != "$node" ]; then
		bad "$name under $node, upstream under $want"
	else
		ok "$name@@$node"
	fi
done
((funcs > 0)) || bad "no functions exported"

# Version definitions and their parents.
chain=$(readelf -V "$LIB" | awk '/Version definition/ { d = 1 } /Version needs/ { d = 0 }
	d && /Name: RDMACM/ { name = $NF } d && /Parent 1:/ { print name ">" $NF }')
want_chain="RDMACM_1.1>RDMACM_1.0 RDMACM_1.2>RDMACM_1.1 RDMACM_1.3>RDMACM_1.2 RDMACM_1.4>RDMACM_1.3 RDMACM_1.5>RDMACM_1.4"
[ "$(echo $chain)" = "$want_chain" ] && ok "version chain RDMACM_1.0 -> 1.5" || bad "version chain: $(echo $chain)"
# Debian's library defines 1.0..1.3 with the same parents.
deb_chain=$(readelf -V "$DEB" | awk '/Version definition/ { d = 1 } /Version needs/ { d = 0 }
	d && /Name: RDMACM/ { name = $NF } d && /Parent 1:/ { print name ">" $NF }')
[[ " $(echo $chain) " == *" $(echo $deb_chain) "* ]] && ok "chain agrees with Debian's ($(echo $deb_chain))" ||
	bad "chain differs from Debian's: $(echo $deb_chain)"
if [ -n "$V65" ]; then
	v65_chain=$(readelf -V "$V65" | awk '/Version definition/ { d = 1 } /Version needs/ { d = 0 }
		d && /Name: RDMACM/ { name = $NF } d && /Parent 1:/ { print name ">" $NF }')
	[ "$(echo $v65_chain)" = "$want_chain" ] && ok "chain agrees with upstream v65" || bad "v65 chain: $(echo $v65_chain)"
fi

# File name: librdmacm.so.1.<newest node with a function>.<version>
level=$(for s in $ours; do [[ ${s%@*} == RDMACM_* ]] || echo "${s#*@RDMACM_1.}"; done | sort -n | tail -n1)
[[ $(basename "$real") == librdmacm.so.1.$level.* ]] && ok "file name $(basename "$real") (ABI level $level)" ||
	bad "file name $(basename "$real") does not carry ABI level $level"

# Nothing but our functions and the version symbols: no Rust or libgcc internals.
leaks=$(objdump -T "$LIB" | awk '$0 !~ /\*UND\*/ && NF >= 7 { print $NF }' | grep -Ev '^(rdma_|r[a-z]+$|repoll_|RDMACM_1\.)' || true)
[ -z "$leaks" ] && ok "no internal symbols exported" || bad "internal symbols exported: $(echo $leaks)"

echo "$pass passed, $fail failed"
((fail == 0))
