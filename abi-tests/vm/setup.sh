#!/usr/bin/env bash
# setup.sh — prepare the soft-RoCE test bed (idempotent, cached in .cache/vm):
#  - host packages (qemu, busybox, rdma-core programs, perftest, build tools);
#  - two Debian kernels, downloaded only (never installed on the host) with a
#    private apt configuration: bookworm's 6.1 and the newest
#    trixie-backports kernel (>= 6.18);
#  - per kernel: vmlinuz, the modules the bed needs (decompressed, in load
#    order) and a busybox initramfs whose /init mounts the host root
#    read-only over 9p and runs the requested command (abi-tests/vm/init).
# Every failure ends with one line "vm setup: <cause>" and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
C=$REPO/.cache/vm
mkdir -p "$C"
die() { echo "vm setup: $*" >&2; exit 1; }

# --- host packages ---------------------------------------------------------
pkgs=(qemu-system-x86 busybox-static kmod cpio xz-utils zstd iproute2 rdma-core ibverbs-providers ibverbs-utils
      rdmacm-utils perftest librdmacm1 librdmacm-dev libibverbs-dev valgrind strace
      cmake ninja-build libudev-dev libnl-3-dev libnl-route-3-dev pkg-config gcc python3)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "vm setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
		die "apt-get install ${missing[*]} failed"
fi

# --- private apt configuration (host sources untouched) ----------------------
A=$C/apt
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc"
cat >"$A/sources.list" <<SRC
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian trixie-backports main
deb-src http://deb.debian.org/debian sid main
SRC
APT=(-o Dir::Etc::sourcelist="$A/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$A/lists"
     -o Dir::Cache="$A/cache" -o Dir::Etc::preferences="$A/etc/none" -o Dir::Etc::preferencesparts="$A/etc"
     -o APT::Get::List-Cleanup=0 -o Acquire::Retries=3 -o Debug::NoLocking=1)
export APT_PRIVATE="${APT[*]}"
if [ -z "$(find "$A/lists" -name '*Packages*' -mmin -1440 2>/dev/null | head -n1)" ]; then
	apt-get "${APT[@]}" update -qq >/dev/null 2>&1 || die "apt-get update (private config for kernels) failed"
fi

# Newest linux-image-<ver> of a suite: the version the meta package depends on.
kernel_pkg() { # suite-regex -> package name
	apt-cache "${APT[@]}" show linux-image-amd64 2>/dev/null | awk -v want="$1" '
		/^Version:/ { v = $2 } /^Depends:/ { d = $0 }
		/^$/ { if (v ~ want) { print v "\t" d } v = ""; d = "" }' |
		sort -V | tail -n1 | grep -oE 'linux-image-[0-9][^ ,]*amd64' | head -n1
}

fetch_kernel() { # tag version-regex
	local tag=$1 re=$2 dir=$C/k-$1
	if [ -f "$dir/ready" ]; then return 0; fi
	local img
	img=$(kernel_pkg "$re") || true
	[ -n "$img" ] || die "no linux-image-amd64 matching '$re' in the private apt lists"
	echo "vm setup: kernel $tag = $img"
	rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/root"
	local kver=${img#linux-image-}
	# Since 6.19 Debian splits the kernel into image/binary/modules/base packages.
	local want=("$img")
	for extra in "linux-binary-$kver" "linux-modules-$kver" "linux-base-$kver"; do
		apt-cache "${APT[@]}" show "$extra" >/dev/null 2>&1 && want+=("$extra")
	done
	(cd "$dir/debs" && apt-get "${APT[@]}" download "${want[@]}" >/dev/null 2>&1) ||
		die "download of ${want[*]} failed"
	for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/root"; done
	local vmlinuz
	vmlinuz=$(find "$dir/root" \( -name "vmlinuz-$kver" -o -path "*/modules/$kver/vmlinuz" \) | head -n1)
	[ -n "$vmlinuz" ] || die "no vmlinuz-$kver in ${want[*]}"
	cp "$vmlinuz" "$dir/vmlinuz"
	local mdir
	mdir=$(find "$dir/root" -maxdepth 4 -type d -path "*/modules/$kver" | head -n1)
	[ -n "$mdir" ] || die "no modules for $kver"
	# busybox insmod cannot read compressed modules.
	find "$mdir" -name '*.ko.xz' -exec xz -d -f {} + 2>/dev/null || true
	find "$mdir" -name '*.ko.zst' -exec zstd -q -d --rm {} + 2>/dev/null || true
	mkdir -p "$dir/mods/lib/modules"
	ln -sfn "$mdir" "$dir/mods/lib/modules/$kver"
	depmod -b "$dir/mods" "$kver" || die "depmod failed for $kver"
	echo "$kver" >"$dir/kver"
	build_initrd "$tag" "$kver" "$dir/mods"
	rm -rf "$dir/debs"
	touch "$dir/ready"
}

build_initrd() { # tag kver modroot
	local tag=$1 kver=$2 mroot=$3 dir=$C/k-$1 ird
	ird=$(mktemp -d)
	mkdir -p "$ird"/{bin,dev,proc,sys,host,mods,tmp}
	cp /bin/busybox "$ird/bin/busybox"
	for a in sh mount umount mkdir insmod chroot poweroff cat echo sleep ls ln; do ln -s busybox "$ird/bin/$a"; done
	local order=()
	local m
	# crc32_generic: rdma_rxe asks the crypto API for "crc32" (a soft dependency).
	for m in virtio_pci 9pnet_virtio 9p dummy veth crc32_generic rdma_rxe rdma_ucm; do
		while read -r kind path _; do
			[ "$kind" = insmod ] || continue
			local base
			base=$(basename "$path")
			[[ " ${order[*]} " == *" $base "* ]] && continue
			cp "$path" "$ird/mods/$base"
			order+=("$base")
		done < <(modprobe -d "$mroot" -S "$kver" --show-depends "$m" 2>/dev/null || true)
	done
	((${#order[@]} > 3)) || die "module dependencies of $kver not found"
	printf '%s\n' "${order[@]}" >"$ird/mods/order"
	cp "$REPO/abi-tests/vm/init" "$ird/init"
	chmod +x "$ird/init"
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1 >"$dir/initrd.gz") || die "initramfs build failed"
	rm -rf "$ird"
}

fetch_kernel 6.1 '^6\.1\.'
fetch_kernel new '~bpo13'
# A changed /init means a new initramfs (modules stay cached).
for tag in 6.1 new; do
	if ! cmp -s "$REPO/abi-tests/vm/init" "$C/k-$tag/init.used" || ! cmp -s "$0" "$C/k-$tag/setup.used"; then
		build_initrd "$tag" "$(cat "$C/k-$tag/kver")" "$C/k-$tag/mods"
		cp "$REPO/abi-tests/vm/init" "$C/k-$tag/init.used"
		cp "$0" "$C/k-$tag/setup.used"
	fi
done
[ "$(cat "$C/k-new/kver")" \> "6.17" ] || die "trixie-backports kernel $(cat "$C/k-new/kver") is older than 6.18"
echo "vm setup: ready (6.1: $(cat "$C/k-6.1/kver"), new: $(cat "$C/k-new/kver"))"
