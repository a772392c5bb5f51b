#!/usr/bin/env bash
# build-v65.sh — upstream rdma-core v65 (the reference for RDMACM_1.4/1.5),
# built at test time from Debian sid's source package, never committed.
# Downloads with a private apt configuration (deb-src sid; the host's apt
# setup is untouched), unpacks the orig tarball into
# .cache/upstream/rdma-core-<ver> and builds it in place without pyverbs and
# man pages (about 35 s on 2 cores): build/lib/librdmacm.so.1 (RDMACM_1.0-1.5)
# and build/bin/. Idempotent (a second run only prints the path). Prints the
# library dir and writes it to .cache/upstream/v65-libdir.
#
# Running programs on it — two ways:
#  LD_LIBRARY_PATH=.cache/upstream/v65-rdmacm
#      a directory holding only a link to v65's librdmacm.so.1: v65's
#      librdmacm with Debian's libibverbs 44 and its providers. This works
#      because v65's librdmacm imports only public IBVERBS_1.0-1.10 symbols,
#      which libibverbs 44 has (the tests use this).
#  LD_LIBRARY_PATH=$(cat .cache/upstream/v65-libdir)
#      the whole v65 stack (libibverbs 65 finds its providers, rdmav65, in the
#      build tree); needed for v65's own tools and pyverbs.
set -euo pipefail
cd "$(dirname "$0")/../.."
U=$PWD/.cache/upstream
die() { echo "build-v65: $*" >&2; exit 1; }
mkdir -p "$U"
# Done before? (paths recomputed: the cache may have moved with the repo)
for lib in "$U"/rdma-core-*/build/lib/librdmacm.so.1; do
	if [ -e "$lib" ] && [ -e "$U/v65-rdmacm/librdmacm.so.1" ]; then
		dirname "$lib" >"$U/v65-libdir"
		cat "$U/v65-libdir"
		exit 0
	fi
done
for p in cmake ninja-build libudev-dev libnl-3-dev libnl-route-3-dev pkg-config gcc python3; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=" $p"
done
if [ -n "${missing:-}" ]; then
	export DEBIAN_FRONTEND=noninteractive
	# `apt-get update` only when the install needs it.
	apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1; } ||
		die "cannot install$missing"
fi
A=$U/apt
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc" "$U/src"
echo "deb-src http://deb.debian.org/debian sid main" >"$A/sources.list"
APT=(-o Dir::Etc::sourcelist="$A/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$A/lists"
     -o Dir::Cache="$A/cache" -o Dir::Etc::preferencesparts="$A/etc" -o Acquire::Retries=3 -o Debug::NoLocking=1)
for try in 1 2 3; do
	apt-get "${APT[@]}" update -qq >"$A/update.log" 2>&1 && break
	((try < 3)) || die "apt-get update with the private sid deb-src line failed (see $A/update.log)"
	sleep 5
done
ver=$(apt-get "${APT[@]}" source --print-uris rdma-core 2>/dev/null | grep -oE "rdma-core_[0-9.]+\.orig\.tar\.[a-z]+" | head -n1)
[ -n "$ver" ] || die "no rdma-core source package in sid"
case $ver in rdma-core_6[5-9]*|rdma-core_[7-9]*) ;; *) die "sid has $ver, need >= 65" ;; esac
# Only the orig tarball is needed (the Debian packaging files may lag on a
# mirror); apt checks it against the signed Sources list, and so do we.
sha=$(apt-get "${APT[@]}" source --print-uris rdma-core 2>/dev/null | awk -v f="$ver" '$2 == f { sub(/^SHA256:/, "", $4); print $4 }')
if ! echo "$sha  $U/src/$ver" | sha256sum -c --quiet >/dev/null 2>&1; then
	(cd "$U/src" && apt-get "${APT[@]}" source --download-only rdma-core >/dev/null 2>&1) || true
fi
echo "$sha  $U/src/$ver" | sha256sum -c --quiet >/dev/null 2>&1 || die "download of $ver failed"
v=${ver#rdma-core_}; v=${v%.orig.tar.*}
dir=$U/rdma-core-$v
rm -rf "$dir"
mkdir -p "$dir"
tar -xf "$U/src/$ver" -C "$dir" --strip-components=1 || die "cannot unpack $ver"
(cd "$dir" && EXTRA_CMAKE_FLAGS="-DNO_PYVERBS=1 -DNO_MAN_PAGES=1" bash build.sh >"$U/build-$v.log" 2>&1) ||
	die "build failed (see $U/build-$v.log)"
[ -e "$dir/build/lib/librdmacm.so.1" ] || die "no librdmacm.so.1 after the build"
mkdir -p "$U/v65-rdmacm"
ln -sfn "../rdma-core-$v/build/lib/librdmacm.so.1" "$U/v65-rdmacm/librdmacm.so.1"
echo "$dir/build/lib" >"$U/v65-libdir"
cat "$U/v65-libdir"
