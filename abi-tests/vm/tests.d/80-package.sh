#!/usr/bin/env bash
# 80-package.sh — (guest side) the Debian packages of `make deb`
# (build/deb/, built and checked on the host by abi-tests/package/check.sh)
# installed as a user would, over Debian 12's librdmacm1/librdmacm-dev, in a
# throwaway root: a private mount namespace with overlays on /usr, /etc and
# /var (the host root the guest runs on stays read-only; the overlays'
# upper layers are tmpfs). Then, with no LD_PRELOAD or LD_LIBRARY_PATH:
#  - apt-get installs ./build/deb/*.deb as an upgrade of Debian's packages;
#    dpkg's database is consistent and every installed reverse dependency
#    of librdmacm1 is still installed; the others would install without
#    touching librdmacm1 (apt-get -s);
#  - ldd of rping, ib_send_bw and fi_info (libfabric) resolves librdmacm.so.1 to ours;
#  - pairs of the program matrix (programs.sh; all of them on request,
#    below) and, with
#    SUITE_ALL_KERNELS=1 or PACKAGE_CLIENTS=1, every third-party client
#    pair (clients.sh: libfabric, UCX, qperf, fio; each first with
#    Debian's library, before the install) passes on the installed library,
#    and rstream passes through the installed preload library;
#  - a program built with `pkg-config --cflags --libs librdmacm`, and one
#    linked statically with `pkg-config --static`, runs; man finds the pages;
#  - reinstalling Debian's packages (.cache/debs) goes back: Debian's file,
#    Debian's version, and a program pair passes on it.
# suite-timeout: 900
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
EMPTY_EXIT=0
lib_deb=$(ls "$REPO"/build/deb/librdmacm1_*_amd64.deb 2>/dev/null | head -n1)
dev_deb=$(ls "$REPO"/build/deb/librdmacm-dev_*_amd64.deb 2>/dev/null | head -n1)
DEBV=44.0-2
deb_lib=$REPO/.cache/debs/librdmacm1_${DEBV}_amd64.deb
deb_dev=$REPO/.cache/debs/librdmacm-dev_${DEBV}_amd64.deb
if [ -z "$lib_deb" ] || [ -z "$dev_deb" ] || [ ! -e "$deb_lib" ]; then
	bad "packages not built (abi-tests/package/check.sh runs make deb on the host)"
	finish
fi

# Kernel 6.1 (Debian 12's own) only: the suite's time budget.
if [[ $KERNEL != 6.1* ]]; then
	skp "the package test runs on kernel 6.1 only (time budget)"
	finish
fi
if [ "${PKG_INNER:-}" != 1 ]; then
	# Everything below runs in its own mount namespace.
	PKG_INNER=1 exec unshare -m --propagation private bash "$0"
fi

work_dir package keep
LIBDIR=/usr/lib/x86_64-linux-gnu
for d in usr etc var; do
	mkdir -p "$tmp/ov/$d/up" "$tmp/ov/$d/work"
	if ! mount -t overlay overlay -o "lowerdir=/$d,upperdir=$tmp/ov/$d/up,workdir=$tmp/ov/$d/work" "/$d" 2>"$tmp/mount.err"; then
		bad "overlay on /$d: $(cat "$tmp/mount.err")"
		finish
	fi
done
ok "throwaway root: overlays on /usr, /etc, /var"
unset LD_PRELOAD LD_LIBRARY_PATH
export DEBIAN_FRONTEND=noninteractive
# The throwaway root only: man-db's trigger off (its index rebuild costs
# minutes under emulation; man -w below finds pages by path, not by the
# index), and apt's caches kept between its runs in $tmp (the bed's root,
# a container image, configures none: every apt-get would parse the whole
# package lists again, ~30 s each here).
rm -f /var/lib/man-db/auto-update
mkdir -p "$tmp/apt-cache"
APT=(apt-get -o "Dir::Cache::srcpkgcache=$tmp/apt-cache/srcpkgcache.bin" -o "Dir::Cache::pkgcache=$tmp/apt-cache/pkgcache.bin")

# Package states, one dpkg-query for all of them: load_status PKG... fills
# STATUS[pkg] ("ii VERSION", "" when unknown); status PKG prints it.
declare -A STATUS=()
load_status() {
	local p st
	STATUS=()
	while read -r p st; do STATUS[$p]=$st; done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}${Version}\n' "$@" 2>/dev/null)
}
status() { echo "${STATUS[$1]:-}"; }
RDEPS=$(grep -v '^#' abi-tests/package/reverse-deps)
load_status librdmacm1 librdmacm-dev $RDEPS
before=$(status librdmacm1)
[ "$before" = "ii $DEBV" ] && ok "before: Debian's librdmacm1 $DEBV installed" || bad "before: librdmacm1 is '$before'"
declare -A had=()
for p in $RDEPS; do [[ $(status "$p") == "ii "* ]] && had[$p]=1; done

# Third-party clients (abi-tests/vm/clients.sh) with Debian's library
# first: the baseline for the same pairs on the installed packages below.
# Only with SUITE_ALL_KERNELS=1 or PACKAGE_CLIENTS=1: make test's time
# budget (they take minutes here; tests.d/81 runs them on our library in
# the 7.3 boot, and the ldd checks below show libfabric resolving ours).
source abi-tests/vm/clients.sh
[ -e "$CLIENT_SHIMS/earlylisten.so" ] || bad "qperf's server shim $CLIENT_SHIMS/earlylisten.so is not built (abi-tests/fault/build.sh)"
PKG_CLIENTS=()
[ -n "${SUITE_ALL_KERNELS:-}${PACKAGE_CLIENTS:-}" ] && PKG_CLIENTS=("${CLIENTS[@]}")
declare -A client_base=()
for spec in "${PKG_CLIENTS[@]}"; do
	client_base[${spec%%|*}]=$(run_client "$spec" "" "$tmp/clients.log")
done

# --- install ours, as a user would
if "${APT[@]}" install -y -q --no-install-recommends "$lib_deb" "$dev_deb" >"$tmp/apt-install.log" 2>&1; then
	ok "apt-get install ./$(basename "$lib_deb") ./$(basename "$dev_deb")"
else
	bad "apt-get install failed: $(tail -n 5 "$tmp/apt-install.log" | tr '\n' ' ')"
	finish
fi
ver=$(dpkg-deb -f "$lib_deb" Version)
load_status librdmacm1 librdmacm-dev $RDEPS
grep -qF "Unpacking librdmacm1:amd64 ($ver) over ($DEBV)" "$tmp/apt-install.log" &&
	ok "librdmacm1 upgraded in place: $DEBV -> $ver" || bad "no in-place upgrade line in apt's log"
[ "$(status librdmacm1)" = "ii $ver" ] && [ "$(status librdmacm-dev)" = "ii $ver" ] &&
	ok "dpkg: librdmacm1 and librdmacm-dev $ver installed" ||
	bad "dpkg: librdmacm1 '$(status librdmacm1)', librdmacm-dev '$(status librdmacm-dev)'"
audit=$(dpkg --audit 2>&1)
[ -z "$audit" ] && ok "dpkg --audit: nothing to report" || bad "dpkg --audit: $audit"
"${APT[@]}" check -q >"$tmp/apt-check.log" 2>&1 && ok "apt-get check: dependencies consistent" ||
	bad "apt-get check: $(tail -n 3 "$tmp/apt-check.log" | tr '\n' ' ')"
notinst=()
for p in $RDEPS; do
	if [ -n "${had[$p]:-}" ]; then
		[[ $(status "$p") == "ii "* ]] && ok "$p still installed" || bad "$p is now '$(status "$p")'"
	else
		notinst+=("$p")
	fi
done
# The others (not on the bed): one simulated install of them all must
# neither replace nor remove librdmacm1.
if ((${#notinst[@]})); then
	sim=$("${APT[@]}" -s -q install --no-install-recommends "${notinst[@]}" 2>&1)
	if grep -qE '^(Inst|Remv) librdmacm' <<<"$sim"; then
		bad "installing ${notinst[*]} would change librdmacm1: $(grep -E '^(Inst|Remv) librdmacm' <<<"$sim" | tr '\n' ' ')"
	else
		for p in "${notinst[@]}"; do
			grep -qE "^Inst $p " <<<"$sim" && ok "$p (not on the bed) would install over ours, librdmacm1 untouched" ||
				bad "$p: apt-get -s install does not install it: $(tail -n 2 <<<"$sim" | tr '\n' ' ')"
		done
	fi
fi
so=$(readlink -f $LIBDIR/librdmacm.so.1)
if [[ $so == $LIBDIR/librdmacm.so.1.5.* ]] && nm -D --defined-only "$so" | grep -q ' repoll_create@@RDMACM_1.5'; then
	ok "$LIBDIR/librdmacm.so.1 -> $(basename "$so"), ours (exports RDMACM_1.5)"
else
	bad "$LIBDIR/librdmacm.so.1 -> $so"
fi
ld=$(readlink -f "$(ldconfig -p | awk '/librdmacm.so.1 .*x86-64/ { print $NF; exit }')")
[ "$ld" = "$so" ] && ok "ld.so.cache: librdmacm.so.1 is ours" || bad "ld.so.cache: $ld"
fab=$(type -P fi_info)
for b in /usr/bin/rping /usr/bin/ib_send_bw $fab; do
	r=$(ldd "$b" 2>&1 | awk '/librdmacm.so.1 =>/ { print $3 }')
	[ -n "$r" ] && [ "$(readlink -f "$r")" = "$so" ] && ok "ldd $(basename "$b"): librdmacm.so.1 => $r (ours)" ||
		bad "ldd $b: librdmacm.so.1 => '$r'"
done
[ -n "$fab" ] || bad "fi_info (libfabric-bin) not installed on the bed: no ldd of a libfabric program"

# --- the program matrix on the installed library
source abi-tests/vm/programs.sh
log=$tmp/programs.log
# (make test: rping, ucmatose, rdma_server/client and ib_send_bw; the
# whole matrix with SUITE_ALL_KERNELS=1 or PACKAGE_ALL_PAIRS=1: the time
# budget; every pair runs on our library in the matrix of both boots)
if [ -z "${SUITE_ALL_KERNELS:-}${PACKAGE_ALL_PAIRS:-}" ]; then
	sel=()
	for spec in "${PAIRS[@]}"; do
		case ${spec%%|*} in rping | ucmatose | rdma_server/client | "ib_send_bw -R") sel+=("$spec") ;; esac
	done
	PAIRS=("${sel[@]}")
fi
prepare_symbols "$SYSTEM_RDMACM" # (the programs of PAIRS: only those run)
for spec in "${PAIRS[@]}"; do
	r=$(run_pair "$spec" system "$log")
	case $r in passed) ok "installed: ${spec%%|*}" ;; skipped*) skp "installed: ${spec%%|*}: $r" ;;
	*) bad "installed: ${spec%%|*}: $r"; tail -n 15 "$log" | sed 's/^/     /' ;; esac
done
for spec in "${PKG_CLIENTS[@]}"; do
	name=${spec%%|*}
	if [ "${client_base[$name]}" != passed ]; then
		skp "installed: $name: fails with Debian's own library (${client_base[$name]}): not counted"
		continue
	fi
	r=$(run_client "$spec" "" "$tmp/clients.log")
	[ "$r" = passed ] && ok "installed: $name (passes with Debian's library too)" || bad "installed: $name: $r"
done
# The installed preload library under an unmodified socket program.
# Proof that RDMA carried it, as tests.d/65 asks: no TCP connection
# opened meanwhile, and rxe0 sent a packet per 4 KiB at least.
pre=$LIBDIR/rsocket/librspreload.so
t0=$(tcp_opens) p0=$(rxe_pkts)
timeout 30 env LD_PRELOAD=$pre rstream -T s -T v -b 192.0.2.1 -p 7479 -C 100 -S 65536 >"$tmp/rs-srv.log" 2>&1 &
srv=$!
sleep 2
if timeout 30 env LD_PRELOAD=$pre rstream -T s -T v -s 192.0.2.1 -p 7479 -C 100 -S 65536 >"$tmp/rs-cli.log" 2>&1 && wait $srv; then
	opens=$(($(tcp_opens) - t0)) pk=$(($(rxe_pkts) - p0))
	if ((opens == 0 && pk >= 2 * 100 * 65536 / 4096)); then
		ok "rstream -T s through the installed $pre: over RDMA ($pk rxe0 packets, no TCP connection)"
	else
		bad "rstream -T s through the installed preload: $opens TCP connection ends opened, $pk rxe0 packets"
	fi
else
	bad "rstream through the installed preload: $(tail -n 3 "$tmp/rs-cli.log" "$tmp/rs-srv.log" | tr '\n' ' ')"
fi
wait $srv 2>/dev/null

# --- building against the installed -dev package
cat >"$tmp/t.c" <<'C'
#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in a;
	int rc;
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return 2;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", &a.sin_addr);
	rc = rdma_bind_addr(id, (struct sockaddr *)&a);
	printf("bind %d device %s cmd %zu\n", rc, id->verbs ? ibv_get_device_name(id->verbs->device) : "-",
	       sizeof(struct ucma_abi_cmd_hdr));
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return rc ? 3 : 0;
}
C
if cc -o "$tmp/t" "$tmp/t.c" $(pkg-config --cflags --libs librdmacm) -libverbs 2>"$tmp/cc.log"; then
	out=$("$tmp/t" 2>&1)
	r=$(ldd "$tmp/t" | awk '/librdmacm.so.1 =>/ { print $3 }')
	[[ $out == "bind 0 device rxe0 cmd 8" && $(readlink -f "$r") == "$so" ]] &&
		ok "pkg-config --cflags --libs librdmacm: builds, links ours, runs ($out)" ||
		bad "program built with pkg-config: '$out', librdmacm.so.1 => $r"
else
	bad "cc with pkg-config flags: $(head -n 5 "$tmp/cc.log" | tr '\n' ' ')"
fi
if cc -o "$tmp/ts" "$tmp/t.c" $(pkg-config --cflags librdmacm) -Wl,-Bstatic -lrdmacm -Wl,-Bdynamic \
	$(pkg-config --static --libs librdmacm | sed 's/-lrdmacm\b//') 2>"$tmp/ccs.log"; then
	out=$("$tmp/ts" 2>&1)
	if [[ $out == "bind 0 device rxe0 cmd 8" ]] && ! readelf -d "$tmp/ts" | grep -q 'NEEDED.*librdmacm'; then
		ok "pkg-config --static: linked with $LIBDIR/librdmacm.a (no NEEDED librdmacm), runs ($out)"
	else
		bad "static program: '$out', $(readelf -d "$tmp/ts" | grep NEEDED | tr '\n' ' ')"
	fi
else
	bad "static link with pkg-config --static: $(head -n 5 "$tmp/ccs.log" | tr '\n' ' ')"
fi
# (the pages' owner from one dpkg -L of librdmacm-dev: dpkg -S would read
# every installed package's file list, ~10 s a page here)
dev_files=$'\n'$(dpkg -L librdmacm-dev 2>/dev/null)$'\n'
for page in rdma_cm.7 rdma_create_id.3 rsocket.7 rbind.3 repoll_wait.3 rdma_post_send.3; do
	f=$(man -w "${page##*.}" "${page%.*}" 2>/dev/null)
	# (one page formatted: groff costs seconds a page here; the host's
	# man-check formats them all)
	if [ -n "$f" ] && [[ $dev_files == *$'\n'"$f"$'\n'* ]] &&
		{ [ "$page" != rdma_cm.7 ] || man -P cat "${page##*.}" "${page%.*}" 2>/dev/null | grep -q .; }; then
		ok "man ${page##*.} ${page%.*}: $f (librdmacm-dev)"
	else
		bad "man ${page##*.} ${page%.*}: '$f'"
	fi
done

# --- back to Debian's packages
if "${APT[@]}" install -y -q --allow-downgrades --no-install-recommends "$deb_lib" "$deb_dev" >"$tmp/apt-back.log" 2>&1; then
	ok "apt-get install Debian's $DEBV again (a downgrade)"
else
	bad "reinstalling Debian's packages: $(tail -n 5 "$tmp/apt-back.log" | tr '\n' ' ')"
fi
rm -rf "$tmp/apt-cache" # (not kept with the logs: tens of MB)
load_status librdmacm1 librdmacm-dev "${!had[@]}"
[ "$(status librdmacm1)" = "ii $DEBV" ] && [ "$(status librdmacm-dev)" = "ii $DEBV" ] &&
	ok "dpkg: Debian's $DEBV installed again" || bad "after going back: librdmacm1 '$(status librdmacm1)'"
back=$(readlink -f $LIBDIR/librdmacm.so.1)
[ "$back" = "$LIBDIR/librdmacm.so.1.3.44.0" ] && [ ! -e "$so" ] && ok "librdmacm.so.1 -> Debian's $(basename "$back"), ours removed" ||
	bad "after going back: librdmacm.so.1 -> $back"
for p in "${!had[@]}"; do [[ $(status "$p") == "ii "* ]] || bad "after going back: $p is '$(status "$p")'"; done
SYM_DEFS=() SYM_NAMES=() SYM_IMPORTS=() # the same path is another file now
PAIRS=("${PAIRS[0]}")
prepare_symbols "$SYSTEM_RDMACM"
r=$(run_pair "${PAIRS[0]}" system "$log")
[ "$r" = passed ] && ok "Debian's library again: ${PAIRS[0]%%|*} passed" || bad "Debian's library again: ${PAIRS[0]%%|*}: $r"
finish
