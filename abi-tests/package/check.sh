#!/usr/bin/env bash
# check.sh — (host; a step of `make test`) `make deb` and the two packages
# it builds, set beside Debian 12's librdmacm1/librdmacm-dev (44.0-2,
# downloaded into .cache/debs/, which the guest test tests.d/80-package.sh
# also uses to go back to Debian's):
#  - names, version (newer than Debian's, so apt upgrades in place), fields;
#  - every file Debian's packages install has its counterpart in ours (the
#    library's own file name carries our ABI level), man pages included;
#  - the symbols file: every line of Debian's, plus RDMACM_1.4/1.5, and
#    dpkg-gensymbols found no difference from the built library (-c4);
#  - every reverse dependency of librdmacm1 in Debian 12 (reverse-deps)
#    is satisfied by our version, installed or not;
#  - lintian: no error, and no warning beyond abi-tests/package/lintian-expected
#    (each justified in the README).
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
done_() { echo "$pass passed, $fail failed"; ((fail == 0)); exit; }
mkdir -p build/logs .cache/debs

# Debian's packages, the reference (and what the guest reinstalls).
DEBV=44.0-2
get_debian() {
	(cd .cache/debs && apt-get download -q "librdmacm1=$DEBV" "librdmacm-dev=$DEBV") >/dev/null 2>&1
}
if ! ls .cache/debs/librdmacm1_${DEBV}_amd64.deb .cache/debs/librdmacm-dev_${DEBV}_amd64.deb >/dev/null 2>&1; then
	get_debian || { apt-get update -qq >/dev/null 2>&1; get_debian; } ||
		{ bad "cannot download Debian's librdmacm1/librdmacm-dev $DEBV"; done_; }
fi
ok "Debian's librdmacm1 and librdmacm-dev $DEBV in .cache/debs"

if make --no-print-directory deb >build/logs/deb-build.log 2>&1; then
	ok "make deb"
else
	bad "make deb failed:"; tail -n 20 build/logs/deb-build.log | sed 's/^/     /'
	done_
fi
lib=$(ls build/deb/librdmacm1_*_amd64.deb 2>/dev/null | head -n1)
dev=$(ls build/deb/librdmacm-dev_*_amd64.deb 2>/dev/null | head -n1)
if [ -z "$lib" ] || [ -z "$dev" ] || [ "$(ls build/deb/*.deb | wc -l)" != 2 ]; then
	bad "build/deb holds $(ls build/deb 2>/dev/null | tr '\n' ' '), want librdmacm1 and librdmacm-dev only"
	done_
fi
ok "build/deb: $(basename "$lib") $(basename "$dev")"

ver=$(dpkg-deb -f "$lib" Version)
cargo_ver=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
[[ $ver == *"rdmacmrs$cargo_ver" ]] && ok "version $ver carries the crate's $cargo_ver" ||
	bad "version $ver does not end in rdmacmrs$cargo_ver (debian/changelog vs Cargo.toml)"
dpkg --compare-versions "$ver" gt "$DEBV" && ok "$ver > Debian's $DEBV: apt upgrades in place" ||
	bad "$ver is not newer than $DEBV"
[ "$(dpkg-deb -f "$dev" Version)" = "$ver" ] && ok "librdmacm-dev has the same version" || bad "librdmacm-dev version differs"
dpkg-deb -f "$dev" Depends | grep -qF "librdmacm1 (= $ver)" && ok "librdmacm-dev depends on librdmacm1 (= $ver)" ||
	bad "librdmacm-dev Depends: $(dpkg-deb -f "$dev" Depends)"
for f in Multi-Arch:same Section:libs Architecture:amd64; do
	[ "$(dpkg-deb -f "$lib" "${f%%:*}")" = "${f#*:}" ] && ok "librdmacm1 $f" || bad "librdmacm1 ${f%%:*}: $(dpkg-deb -f "$lib" "${f%%:*}")"
done
deps=$(dpkg-deb -f "$lib" Depends)
[[ $deps == *"libibverbs1 ("* && $deps == *"libc6 ("* ]] && ok "librdmacm1 Depends from dpkg-shlibdeps: $deps" ||
	bad "librdmacm1 Depends: $deps"

# Files: Debian's list against ours.
list() { dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^/$' | sort; }
for pair in "librdmacm1:$lib" "librdmacm-dev:$dev"; do
	name=${pair%%:*} ours=${pair#*:}
	want=$(list ".cache/debs/${name}_${DEBV}_amd64.deb" | sed -E 's|/librdmacm\.so\.1\.[0-9]+\.[0-9.]+$|/librdmacm.so.1.LEVEL|; s|/share/doc/.*||')
	have=$(list "$ours" | sed -E 's|/librdmacm\.so\.1\.[0-9]+\.[0-9.]+$|/librdmacm.so.1.LEVEL|; s|/share/doc/.*||')
	missing=$(comm -23 <(sort -u <<<"$want") <(sort -u <<<"$have"))
	if [ -z "$missing" ]; then
		ok "$name: every file of Debian's package is in ours ($(grep -c . <<<"$want") paths)"
	else
		bad "$name: missing $(tr '\n' ' ' <<<"$missing")"
	fi
	extra=$(comm -13 <(sort -u <<<"$want") <(sort -u <<<"$have") | tr '\n' ' ')
	[ -n "$extra" ] && echo "#    $name also ships: $extra"
done
grep -q "librdmacm.so.1 -> librdmacm.so.1.[0-9]" <<<"$(dpkg-deb -c "$lib")" && ok "librdmacm.so.1 link" || bad "no librdmacm.so.1 link"
grep -q "librdmacm.so -> librdmacm.so.1" <<<"$(dpkg-deb -c "$dev")" && ok "librdmacm.so link" || bad "no librdmacm.so link"

# Symbols and shlibs.
ctl=$(mktemp -d) && trap 'rm -rf "$ctl"' EXIT
dpkg-deb -e "$lib" "$ctl/ours" && dpkg-deb -e ".cache/debs/librdmacm1_${DEBV}_amd64.deb" "$ctl/deb"
lost=$(comm -23 <(sort "$ctl/deb/symbols") <(sort "$ctl/ours/symbols"))
[ -z "$lost" ] && ok "symbols: every line of Debian's symbols file is in ours ($(grep -c '@' "$ctl/deb/symbols") symbols)" ||
	bad "symbols: Debian's lines missing or changed in ours: $(tr '\n' ';' <<<"$lost")"
new=$(comm -13 <(sort "$ctl/deb/symbols") <(sort "$ctl/ours/symbols") | tr -s ' ' | tr '\n' ';')
echo "#    symbols only in ours: $new"
nsym=$(grep -c '@RDMACM' "$ctl/ours/symbols")
nexp=$(nm -D --defined-only "$(readlink -f build/librdmacm.so.1)" | grep -c ' [TW] [a-z]')
[ "$nsym" = $((nexp + 6)) ] && ok "symbols file: $nexp functions + 6 version nodes, as exported" ||
	bad "symbols file has $nsym entries, the library exports $nexp functions (+6 nodes)"
grep -q 'activate-noawait ldconfig' "$ctl/ours/triggers" && ok "ldconfig trigger" || bad "no ldconfig trigger"

# Reverse dependencies (Debian 12): each one's requirement on librdmacm1.
for p in $(grep -v '^#' abi-tests/package/reverse-deps); do
	req=$(apt-cache show "$p" 2>/dev/null | sed -n '/^Depends:/{s/^Depends: //;p;q}' | tr ',' '\n' |
		grep -o 'librdmacm1 ([^)]*)' | head -n1)
	if [ -z "$req" ]; then bad "$p: no Depends on librdmacm1 found (apt-cache show $p)"; continue; fi
	op=$(sed -E 's/librdmacm1 \(([<>=]+) .*/\1/' <<<"$req") v=$(sed -E 's/.* ([^ )]+)\)/\1/' <<<"$req")
	case $op in '>=') o=ge ;; '>>') o=gt ;; '=') o=eq ;; '<=') o=le ;; '<<') o=lt ;; *) o=? ;; esac
	dpkg --compare-versions "$ver" "$o" "$v" && ok "$p: $req satisfied by $ver" || bad "$p: $req not satisfied by $ver"
done

# lintian (Debian's package checker).
if command -v lintian >/dev/null; then
	lintian --no-cfg --fail-on none -i "$lib" "$dev" >build/logs/lintian.log 2>&1
	grep -E '^E: ' build/logs/lintian.log | sed 's/^/     /'
	nerr=$(grep -c '^E: ' build/logs/lintian.log)
	((nerr == 0)) && ok "lintian: no error" || bad "lintian: $nerr errors"
	tags=$(grep -E '^W: ' build/logs/lintian.log | sed -E 's/^W: ([^ ]+) [^ ]+: ([^ ]+).*/\1 \2/' | sort -u)
	extra=$(comm -23 <(grep . <<<"$tags") <(grep -v '^#' abi-tests/package/lintian-expected | grep . | sort -u))
	if [ -z "$extra" ]; then
		ok "lintian: warnings only those in abi-tests/package/lintian-expected ($(grep -c . <<<"$tags"))"
	else
		bad "lintian: unexpected warnings: $(tr '\n' ';' <<<"$extra") (build/logs/lintian.log)"
	fi
else
	bad "lintian is not installed (abi-tests/setup-host.sh installs it)"
fi
done_
