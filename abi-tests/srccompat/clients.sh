#!/usr/bin/env bash
# clients.sh — (host; a step of `make test`) the third-party clients of
# issue 14 compiled from Debian 12's own source packages against OUR
# headers (include/ first on the include path), at the versions the bed
# runs:
#   qperf   the whole program, configured and linked against build/
#           (-L build: the link resolves librdmacm to ours);
#   fio     the whole program with its rdma ioengine, likewise;
#   UCX     its rdmacm connection manager (src/uct/ib/rdmacm, the code that
#           includes rdma/rdma_cma.h), configured as Debian does and
#           compiled to objects (the rest of UCX does not use librdmacm);
#   libfabric built whole with its verbs and rxm providers and installed
#           under build/clients-src/inst (Debian 12's 1.17 source when the
#           mirror serves it; here it does not, and trixie's 2.1 is used).
# For each: the compiler's dependency lists must show that every librdmacm
# header read (rdma/rdma_cma.h, rdma_cma_abi.h, rdma_verbs.h, rsocket.h,
# infiniband/ib.h) came from include/ and none from the system, and every
# rdma_* / r* function the objects call must be exported by our library.
# The programs are left in build/clients-src/{bin,inst/bin} for the guest
# (tests.d/81-clients.sh runs them on Debian's library and on ours).
# Sources are downloaded once into .cache/client-src (apt-get source with a
# private deb-src list; nothing on the host's apt configuration changes).
# The sources are fetched first, one after the other; then the builds run in
# two lanes (libfabric, the longest, beside qperf, fio and UCX: most of a
# build is a single-threaded configure, and the host has two cores), each
# client's report kept in its own file and printed in the order above.
# Ends with "N passed, M failed, K skipped".
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
C=$ROOT/.cache/client-src
A=$C/apt
OUT=$ROOT/build/clients-src
pass=0 fail=0 skip=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
skp() { echo "skip $*"; skip=$((skip + 1)); }
finish() {
	echo "$pass passed, $fail failed, $skip skipped"
	((fail == 0))
	exit
}

rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/src" "$A/lists/partial" "$A/cache/archives/partial" "$C/dl"
echo "deb-src http://deb.debian.org/debian bookworm main" >"$A/sources.list"
APT=(apt-get -q -o "Dir::Etc::sourcelist=$A/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$A/lists"
	-o "Dir::Cache=$A/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
updated=0

# fetch SOURCE-PACKAGE BINARY-PACKAGE: the source of the installed binary
# package's version, unpacked (Debian's patches applied) into $OUT/src;
# prints the directory.
fetch() {
	local srcpkg=$1 bin=$2 ver dsc
	ver=$(dpkg-query -W -f '${Version}' "$bin" 2>/dev/null) || { echo "$bin is not installed" >&2; return 1; }
	dsc=$C/dl/${srcpkg}_${ver#*:}.dsc
	if [ ! -s "$dsc" ]; then
		if ((!updated)); then
			"${APT[@]}" update >"$OUT/apt-update.log" 2>&1 || { echo "apt-get update (deb-src) failed: $(tail -n1 "$OUT/apt-update.log")" >&2; return 1; }
			updated=1
		fi
		(cd "$C/dl" && "${APT[@]}" source --download-only "$srcpkg=$ver") >"$OUT/$srcpkg-download.log" 2>&1 ||
			{ echo "apt-get source $srcpkg=$ver: $(grep -m1 -E '^E:' "$OUT/$srcpkg-download.log")" >&2; rm -f "$dsc"; return 1; }
	fi
	local dir=$OUT/src/$srcpkg
	dpkg-source --no-check -x "$dsc" "$dir" >"$OUT/$srcpkg-unpack.log" 2>&1 || { echo "dpkg-source -x $dsc failed" >&2; return 1; }
	echo "$dir"
}

# check_deps NAME DEP-FILES...: librdmacm's headers came from include/ only.
check_deps() {
	local name=$1 hdrs foreign
	shift
	hdrs=$(cat "$@" | tr ' \\' '\n\n' | grep -E '(^|/)(rdma/(rdma_cma|rdma_cma_abi|rdma_verbs|rsocket)|infiniband/ib)\.h:?$' | sed 's/:$//' | sort -u)
	foreign=$(grep -v "^$ROOT/include/" <<<"$hdrs")
	if ! grep -q "^$ROOT/include/rdma/rdma_cma.h$" <<<"$hdrs"; then
		bad "$name: the compiler read no include/rdma/rdma_cma.h (read: $(echo $hdrs))"
	elif [ -n "$foreign" ]; then
		bad "$name: librdmacm headers read from outside include/: $(echo $foreign)"
	else
		ok "$name: compiled against include/ ($(sed "s|^$ROOT/include/||" <<<"$hdrs" | tr '\n' ' '| sed 's/ $//'))"
	fi
}

# check_syms NAME OBJECTS...: each librdmacm function they call is ours.
check_syms() {
	local name=$1 ours used missing
	shift
	ours=$(nm -D --defined-only build/librdmacm.so | awk '{ print $3 }' | sed 's/@.*//' | sort -u)
	used=$(nm -u "$@" 2>/dev/null | awk '{ print $2 }' | grep -E '^(rdma_|r(socket|bind|listen|accept|connect|shutdown|close|recv|recvfrom|recvmsg|send|sendto|sendmsg|read|readv|write|writev|getpeername|getsockname|setsockopt|getsockopt|fcntl|poll|select|iomap|iounmap|iowrite)$|repoll_)' | sort -u)
	missing=$(comm -23 <(echo "$used") <(echo "$ours") | grep .)
	if [ -z "$used" ]; then
		bad "$name: its objects call no librdmacm function (nm -u found none)"
	elif [ -n "$missing" ]; then
		bad "$name: calls functions our library does not export: $(echo $missing)"
	else
		ok "$name: the $(wc -w <<<"$used") librdmacm functions it calls are all exported by ours"
	fi
}

# linked_to_ours NAME LOG: the link's trace shows build/librdmacm.so
# defined rdma_create_id.
linked_to_ours() {
	if grep -qE ": $ROOT/build/librdmacm\.so: definition of rdma_create_id$" "$2"; then
		ok "$1: linked against build/librdmacm.so"
	else
		bad "$1: the link did not resolve rdma_create_id in build/librdmacm.so ($(grep -m1 'rdma_create_id' "$2"))"
	fi
}

[ -e build/librdmacm.so ] || { bad "build/librdmacm.so not built"; finish; }
CPP="-I$ROOT/include"
TRACE="-L$ROOT/build -Wl,--trace-symbol=rdma_create_id"

# --- the sources, one after the other (apt's state is not shared between
# lanes).
qperf_dir=$(fetch qperf qperf) || qperf_dir=""
fio_dir=$(fetch fio fio) || fio_dir=""
ucx_dir=$(fetch ucx libucx0) || ucx_dir=""

# --- qperf: autotools, as Debian builds it.
client_qperf() {
	local d=$qperf_dir log
	if [ -n "$d" ]; then
		log=$OUT/qperf-build.log
		if (cd "$d" && ./autogen.sh && ./configure CPPFLAGS="$CPP" LDFLAGS="-L$ROOT/build" &&
			make -C src V=1 LDFLAGS="$TRACE") >"$log" 2>&1; then
			cp "$d/src/qperf" "$OUT/bin/qperf"
			check_deps qperf "$d"/src/.deps/*.Po
			check_syms qperf "$d"/src/*.o
			linked_to_ours qperf "$log"
		else
			bad "qperf does not build against our headers and library: $(grep -m1 -E 'error|undefined' "$log")"
		fi
	else
		bad "qperf: no source"
	fi
}

# --- fio: its own configure script; the rdma engine is built in.
client_fio() {
	local d=$fio_dir log line
	if [ -n "$d" ]; then
		log=$OUT/fio-build.log
		if (cd "$d" && ./configure --disable-native --extra-cflags="$CPP" && grep -q '^CONFIG_RDMA=y' config-host.mak &&
			make -j2 V=1 fio LDFLAGS="$TRACE") >"$log" 2>&1; then
			cp "$d/fio" "$OUT/bin/fio"
			# fio's own dependency lists leave system headers out (-MM): the
			# engine's compile command again, with a full list.
			line=$(grep -m1 -E '^[^ ]*(gcc|cc) -o engines/rdma\.o .* -c .*engines/rdma\.c$' "$log")
			line=${line/-o engines\/rdma.o/-o $OUT/fio-rdma-again.o -MD -MF $OUT/fio-rdma.d}
			(cd "$d" && eval "$line") >>"$log" 2>&1
			check_deps "fio (rdma ioengine)" "$OUT/fio-rdma.d"
			check_syms "fio (rdma ioengine)" "$d"/engines/rdma.o
			linked_to_ours fio "$log"
		else
			bad "fio does not build against our headers and library: $(grep -m1 -E 'error|undefined|CONFIG_RDMA' "$log")"
		fi
	else
		bad "fio: no source"
	fi
}

# --- UCX: configured with Debian's options, the rdmacm module compiled.
client_ucx() {
	local d=$ucx_dir log m objs
	if [ -n "$d" ]; then
		log=$OUT/ucx-build.log
		m=src/uct/ib/rdmacm
		if (cd "$d" && ./autogen.sh && ./configure CPPFLAGS="$CPP" LDFLAGS="-L$ROOT/build" --enable-mt --with-verbs \
			--disable-backtrace-detail --disable-logging --enable-devel-headers --with-rdmacm --without-java --without-go &&
			grep -qE 'UCT modules: .* rdmacm ' config.log &&
			objs=$(sed -n '/^am_libuct_rdmacm_la_OBJECTS/,/^$/p' "$m/Makefile" | grep -oE '[A-Za-z0-9_.-]+\.lo') &&
			make -C "$m" $objs) >"$log" 2>&1; then
			check_deps "UCX rdmacm cm" "$d/$m"/.deps/*.Plo
			check_syms "UCX rdmacm cm" "$d/$m"/.libs/*.o
		else
			bad "UCX's rdmacm module does not compile against our headers: $(grep -m1 -E 'error' "$log")"
		fi
	else
		bad "UCX: no source"
	fi
}

# --- libfabric: Debian 12's source if the mirror serves it; otherwise the
# upstream tarball of Debian 13's package (apt checks it against trixie's
# Sources index). Built whole with the verbs and rxm providers and
# installed under build/clients-src/inst (its programs find that
# libfabric by their run path, librdmacm the usual way).
lf_from=""
if d=$(fetch libfabric libfabric1 2>"$OUT/libfabric-why"); then
	lf_from="Debian 12's source package"
else
	why=$(tail -n1 "$OUT/libfabric-why")
	T=$C/apt-trixie
	mkdir -p "$T/lists/partial" "$T/cache/archives/partial" "$C/dl-trixie"
	echo "deb-src http://deb.debian.org/debian trixie main" >"$T/sources.list"
	TAPT=(apt-get -q -o "Dir::Etc::sourcelist=$T/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$T/lists"
		-o "Dir::Cache=$T/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	tarball=$(ls "$C"/dl-trixie/libfabric_*.orig.tar.* 2>/dev/null | head -n1)
	if [ -z "$tarball" ]; then
		"${TAPT[@]}" update >"$OUT/apt-trixie.log" 2>&1 &&
			(cd "$C/dl-trixie" && "${TAPT[@]}" source --download-only --tar-only libfabric) >>"$OUT/apt-trixie.log" 2>&1
		tarball=$(ls "$C"/dl-trixie/libfabric_*.orig.tar.* 2>/dev/null | head -n1)
	fi
	d=""
	if [ -n "$tarball" ]; then
		mkdir -p "$OUT/src/libfabric" && tar -xf "$tarball" -C "$OUT/src/libfabric" --strip-components=1 && d=$OUT/src/libfabric
		lf_from="$(basename "$tarball") (Debian 13's; Debian 12's is not served here: ${why#*: })"
	fi
fi
lf_dir=$d
client_libfabric() {
	local d=$lf_dir log
	if [ -n "$d" ]; then
		log=$OUT/libfabric-build.log
		if (cd "$d" && { [ -x configure ] || ./autogen.sh; } &&
			./configure --prefix="$OUT/inst" CPPFLAGS="$CPP" LDFLAGS="-L$ROOT/build" --enable-only --enable-verbs=yes --enable-rxm=yes &&
			grep -q 'verbs provider: include in libfabric' config.log &&
			make -j2 V=1 LDFLAGS="$TRACE" && make install) >"$log" 2>&1; then
			echo "     libfabric from $lf_from"
			check_deps "libfabric verbs provider" "$d"/prov/verbs/src/.deps/*.Plo
			check_syms "libfabric verbs provider" "$d"/prov/verbs/src/.libs/*.o "$d"/prov/verbs/src/*.o
			linked_to_ours "libfabric" "$log"
			if readelf -d "$OUT/inst/bin/fi_pingpong" | grep -qE "R(UN)?PATH.*$OUT/inst/lib"; then
				ok "libfabric: fi_pingpong and fi_info installed in build/clients-src/inst, finding that libfabric by their run path"
			else
				bad "libfabric: $OUT/inst/bin/fi_pingpong has no run path to its libfabric"
			fi
		else
			bad "libfabric's verbs provider does not build against our headers: $(grep -m1 -E 'error' "$log")"
		fi
	else
		bad "libfabric: no source (${why:-})"
	fi
}

# --- the builds, in two lanes (each client in a subshell: the counts come
# from its report); then each client's report in order, counted.
client_libfabric >"$OUT/report-libfabric.txt" 2>&1 &
lane=$!
for c in qperf fio ucx; do
	("client_$c") >"$OUT/report-$c.txt" 2>&1
done
wait "$lane"
for c in qperf fio ucx libfabric; do
	cat "$OUT/report-$c.txt"
	pass=$((pass + $(grep -c '^ok ' "$OUT/report-$c.txt")))
	fail=$((fail + $(grep -c '^FAIL ' "$OUT/report-$c.txt")))
	skip=$((skip + $(grep -c '^skip ' "$OUT/report-$c.txt")))
done
finish
