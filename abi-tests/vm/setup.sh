#!/usr/bin/env bash
# setup.sh — prepare the soft-RoCE test bed; idempotent, cached in .cache/vm
# (or $VM_CACHE). A second run with everything in place takes well under a
# second and touches no network.
#
#  1. host packages (qemu, busybox, rdma-core programs, perftest, the socket
#     programs run through the preload: socat, nc, iperf3, redis, ...), with
#     apt-get; `apt-get update` only when an install needs it;
#  2. two Debian kernels, DOWNLOADED ONLY, with a private apt configuration
#     (own sources.list, lists and cache under .cache/vm/apt; the host's apt
#     setup is never touched and no kernel is installed on the host):
#       6.1  the kernel bookworm's linux-image-amd64 points to;
#       new  the newest trixie-backports kernel (>= 6.18; since 6.19 Debian
#            splits it into linux-image-V/linux-binary-V/linux-modules-V/
#            linux-base-V: all that exist are downloaded);
#  3. per kernel, in .cache/vm/k-TAG/: vmlinuz, kver, the modules the bed
#     needs (decompressed, in `modprobe --show-depends` load order) and a
#     busybox initramfs (initrd.gz) whose /init is abi-tests/vm/init.
#     The packages, extracted files and apt lists are deleted afterwards
#     (the cache stays under 40 MB).
#
# Usage: abi-tests/vm/setup.sh [--refresh]   (--refresh: fetch the newest
# kernels again). Every failure ends with one line "vm setup: <cause>" on
# stderr and a non-zero exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
C=${VM_CACHE:-$REPO/.cache/vm}
die() { echo "vm setup: $*" >&2; exit 1; }
retry() { # tries command... — 3 attempts, 5 s apart
	local n
	for n in 1 2 3; do
		"${@:2}" && return 0
		((n < $1)) || break
		sleep 5
	done
	return 1
}
mkdir -p "$C" || die "cannot create $C"
refresh=0
[ "${1:-}" = --refresh ] && refresh=1

# Top-level modules the bed needs; dependencies come from modprobe.
# crc32_generic: rdma_rxe asks the crypto API for "crc32" (soft dependency;
# built in on newer kernels). The list's text is stored with each kernel, so
# changing it here refetches the kernels. overlay: the package test's throwaway
# root (tests.d/80-package.sh).
MODULES="virtio_pci 9pnet_virtio 9p dummy veth crc32_generic rdma_rxe rdma_ucm overlay"

# --- 1. host packages --------------------------------------------------------
pkgs=(qemu-system-x86 busybox-static kmod cpio xz-utils zstd gzip iproute2 binutils procps
      rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest librdmacm1 librdmacm-dev libibverbs-dev
      valgrind strace cmake ninja-build libudev-dev libnl-3-dev libnl-route-3-dev pkg-config gcc python3
      socat netcat-openbsd iperf3 redis-server redis-tools)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "vm setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	pkg_install() { apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$C/apt-install.log" 2>&1; }
	if ! pkg_install; then
		retry 3 apt-get update -qq >"$C/apt-update.log" 2>&1 || die "apt-get update failed (see $C/apt-update.log)"
		pkg_install || die "apt-get install ${missing[*]} failed (see $C/apt-install.log)"
	fi
fi

# --- 2. kernels (private apt configuration) ----------------------------------
A=$C/apt
APT=(-o Dir::Etc::sourcelist="$A/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$A/lists"
     -o Dir::Cache="$A/cache" -o Dir::Etc::preferences="$A/none" -o Dir::Etc::preferencesparts="$A/none.d"
     -o APT::Get::List-Cleanup=0 -o Acquire::Retries=3 -o Debug::NoLocking=1)
lists_ready=0
private_lists() { # refresh the private package lists once per run
	((lists_ready)) && return 0
	mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/none.d"
	cat >"$A/sources.list" <<-SRC
		deb http://deb.debian.org/debian bookworm main
		deb http://deb.debian.org/debian trixie-backports main
	SRC
	retry 3 apt-get "${APT[@]}" update -qq >"$A/update.log" 2>&1 ||
		die "apt-get update with the private kernel sources failed (see $A/update.log)"
	lists_ready=1
}

# linux-image-<abi> that a suite's linux-image-amd64 depends on (newest
# version of the meta package matching the regex).
kernel_pkg() { # version-regex
	apt-cache "${APT[@]}" show linux-image-amd64 2>/dev/null | awk -v want="$1" '
		/^Version:/ { v = $2 } /^Depends:/ { d = $0 }
		/^$/ { if (v ~ want) print v "\t" d; v = ""; d = "" }' |
		sort -V | tail -n1 | grep -oE 'linux-image-[0-9][^ ,]*-amd64' | head -n1 || true
}

version_ge() { [ "$(printf '%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

fetch_kernel() { # tag version-regex
	local tag=$1 re=$2 dir=$C/k-$1
	if ((!refresh)) && [ -f "$dir/ok" ] && [ "$(cat "$dir/modlist" 2>/dev/null)" = "$MODULES" ]; then
		return 0
	fi
	private_lists
	local img kver
	img=$(kernel_pkg "$re")
	[ -n "$img" ] || die "no linux-image-amd64 matching '$re' in the private apt lists"
	kver=${img#linux-image-}
	if ((refresh)) && [ -f "$dir/ok" ] && [ "$(cat "$dir/kver")" = "$kver" ] &&
		[ "$(cat "$dir/modlist" 2>/dev/null)" = "$MODULES" ]; then
		return 0
	fi
	echo "vm setup: kernel $tag = $kver (download and unpack)" >&2
	local tmp=$C/k-$tag.tmp
	rm -rf "$tmp" && mkdir -p "$tmp/debs" "$tmp/root" "$tmp/modules"
	# Since 6.19 the kernel is split into image (meta)/binary/modules/base.
	local want=("$img") extra
	for extra in "linux-binary-$kver" "linux-modules-$kver" "linux-base-$kver"; do
		apt-cache "${APT[@]}" show "$extra" >/dev/null 2>&1 && want+=("$extra")
	done
	(cd "$tmp/debs" && retry 3 apt-get "${APT[@]}" download "${want[@]}" >"$tmp/download.log" 2>&1) ||
		die "download of ${want[*]} failed (see $tmp/download.log)"
	local d
	for d in "$tmp"/debs/*.deb; do dpkg-deb -x "$d" "$tmp/root" || die "cannot unpack $(basename "$d")"; done
	local vmlinuz mdir
	vmlinuz=$(find "$tmp/root" \( -name "vmlinuz-$kver" -o -path "*/modules/$kver/vmlinuz" \) -type f | head -n1)
	[ -n "$vmlinuz" ] || die "no vmlinuz for $kver in ${want[*]}"
	mdir=$(find "$tmp/root" -maxdepth 4 -type d -path "*/modules/$kver" | head -n1)
	[ -n "$mdir" ] || die "no /lib/modules/$kver in ${want[*]}"
	# modprobe -d wants DIR/lib/modules/KVER; depmod writes modules.dep there.
	mkdir -p "$tmp/mroot/lib/modules"
	ln -s "$mdir" "$tmp/mroot/lib/modules/$kver"
	depmod -b "$tmp/mroot" "$kver" || die "depmod failed for $kver"
	local m kind path base order=()
	for m in $MODULES; do
		while read -r kind path _; do
			[ "$kind" = insmod ] || continue
			base=$(basename "$path")
			base=${base%.xz}; base=${base%.zst}; base=${base%.gz}
			[[ " ${order[*]} " == *" $base "* ]] && continue
			case $path in
			*.xz) xz -dc "$path" >"$tmp/modules/$base" ;;
			*.zst) zstd -qdc "$path" >"$tmp/modules/$base" ;;
			*.gz) gzip -dc "$path" >"$tmp/modules/$base" ;;
			*) cp "$path" "$tmp/modules/$base" ;;
			esac || die "cannot decompress $path"
			order+=("$base")
		done < <(modprobe -d "$tmp/mroot" -S "$kver" --show-depends "$m" 2>/dev/null || true)
	done
	[[ " ${order[*]} " == *" rdma_rxe.ko "* && " ${order[*]} " == *" rdma_ucm.ko "* ]] ||
		die "kernel $kver lacks rdma_rxe or rdma_ucm"
	printf '%s\n' "${order[@]}" >"$tmp/modules/order"
	cp "$vmlinuz" "$tmp/vmlinuz"
	echo "$kver" >"$tmp/kver"
	printf '%s\n' "${want[@]}" >"$tmp/packages"
	echo "$MODULES" >"$tmp/modlist"
	rm -rf "$tmp/debs" "$tmp/root" "$tmp/mroot"
	touch "$tmp/ok"
	rm -rf "$dir" && mv "$tmp" "$dir"
}

# --- 3. initramfs --------------------------------------------------------------
build_initrd() { # tag
	local dir=$C/k-$1 ird
	ird=$(mktemp -d)
	mkdir -p "$ird"/{bin,dev,proc,sys,host,results,mods}
	cp /bin/busybox "$ird/bin/busybox" || die "no /bin/busybox (busybox-static)"
	local a
	for a in sh mount umount mkdir insmod chroot poweroff cat echo sleep ln; do ln -s busybox "$ird/bin/$a"; done
	cp "$dir"/modules/* "$ird/mods/"
	cp "$HERE/init" "$ird/init"
	chmod +x "$ird/init"
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1 >"$dir/initrd.gz.new") || die "initramfs build failed"
	mv "$dir/initrd.gz.new" "$dir/initrd.gz"
	rm -rf "$ird"
}

fetch_kernel 6.1 '^6\.1\.'
fetch_kernel new '~bpo13'
# The package lists (~50 MB) are only needed to fetch: drop them.
((lists_ready)) && rm -rf "$A"
knew=$(cat "$C/k-new/kver")
version_ge "$knew" 6.18 || die "the newest trixie-backports kernel ($knew) is older than 6.18"
# Rebuild an initramfs when /init, the modules or busybox changed.
for tag in 6.1 new; do
	sig=$(cat "$HERE/init" "$C/k-$tag/modules/order" /bin/busybox | sha256sum)
	if [ ! -f "$C/k-$tag/initrd.gz" ] || [ "$sig" != "$(cat "$C/k-$tag/initrd.sig" 2>/dev/null)" ]; then
		build_initrd "$tag"
		echo "$sig" >"$C/k-$tag/initrd.sig"
	fi
done
echo "vm setup: ready (6.1: $(cat "$C/k-6.1/kver"), new: $knew)" >&2
