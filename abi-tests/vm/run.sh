#!/usr/bin/env bash
# run.sh — run one command in a fresh soft-RoCE guest.
#
#   abi-tests/vm/run.sh --kernel 6.1|new [--net auto|single|pair] [--timeout SECONDS]
#                       [--out DIR] -- COMMAND...
#
# Boots the kernel prepared by setup.sh under qemu (TCG, 2 CPUs, 2 GiB, no
# NIC). The guest's root is the host's root, read-only over 9p, with tmpfs on
# /tmp, /run and /dev/shm. net-setup.sh builds the network (--net, default
# auto: "pair" on the new kernel, "single" on 6.1; see net-setup.sh: rxe0 on
# 192.0.2.1/fd00::1 always, plus namespaces a/b with `ina`/`inb` in pair
# mode). COMMAND then runs as root with bash, in the repository directory, in
# the initial network namespace; its output streams to stdout and its exit
# code is run.sh's. In the guest, $VM_OUT is a writable share of the host
# directory --out (default: a temporary one, removed afterwards), $VM_KERNEL
# the kernel tag and $VM_NET the network mode. The guest does not inherit the
# host's environment, except RDMACM_UNDER_TEST, SUITE_PARTS, MATRIX_MODES, SUITE_BUDGET, SUITE_ALL_KERNELS,
# TESTD_TIMEOUT, PAIR_TIMEOUT, SERVER_WAIT, SERVER_GRACE and the variables
# named in $VM_ENV, when set.
#
# A kernel panic while the guest boots, before /init starts COMMAND, is
# retried once (noted in the output).
#
# Exit codes: COMMAND's; 124 when the timeout (default 300 s, counted from
# qemu's start) expired and qemu was killed; 125 with one line
# "BED BROKEN: <cause>" when the bed itself failed (kernel not prepared, qemu
# or guest boot failure, modules or rxe missing); 2 for a usage error.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
C=${VM_CACHE:-$REPO/.cache/vm}
usage() { echo "usage: $0 --kernel 6.1|new [--net auto|single|pair] [--timeout S] [--out DIR] -- COMMAND..." >&2; exit 2; }
broken() { echo "BED BROKEN: $* (kernel ${kernel:-?})"; exit 125; }
kernel="" net=auto timeout=300 out=""
while (($#)); do
	case $1 in
	--kernel) (($# >= 2)) || usage; kernel=$2; shift 2 ;;
	--net) (($# >= 2)) || usage; net=$2; shift 2 ;;
	--timeout) (($# >= 2)) || usage; timeout=$2; shift 2 ;;
	--out) (($# >= 2)) || usage; out=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
(($#)) || usage
[[ $kernel == 6.1 || $kernel == new ]] || usage
[[ $net == auto || $net == single || $net == pair ]] || usage
[[ $timeout =~ ^[0-9]+$ ]] || usage
K=$C/k-$kernel
for f in ok vmlinuz initrd.gz kver; do
	[ -f "$K/$f" ] || broken "kernel '$kernel' is not prepared ($K/$f missing; run abi-tests/vm/setup.sh)"
done
if [ "$net" = pair ] && [ "$kernel" = 6.1 ]; then
	echo "run.sh: --net pair needs --kernel new (6.1's rxe works only in the initial network namespace)" >&2
	exit 2
fi
command -v qemu-system-x86_64 >/dev/null || broken "qemu-system-x86_64 is not installed (run abi-tests/vm/setup.sh)"

tmp=$(mktemp -d /tmp/rdmacm-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
share=${out:-$tmp/out}
mkdir -p "$share"
share=$(cd "$share" && pwd)
rm -f "$share"/{rc,cmd.sh,cwd,bed-broken,insmod-failed,started}
echo "$REPO" >"$share/cwd"
{
	echo 'export PATH=/run/rdmacm-bed/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
	echo 'export HOME=/root LANG=C.UTF-8 TERM=dumb'
	printf 'export VM_OUT=/tmp/vmout VM_KERNEL=%q VM_NET=%q\n' "$kernel" "$net"
	for v in RDMACM_UNDER_TEST SUITE_PARTS MATRIX_MODES SUITE_BUDGET SUITE_ALL_KERNELS TESTD_TIMEOUT PAIR_TIMEOUT SERVER_WAIT SERVER_GRACE ${VM_ENV:-}; do
		[ -z "${!v+x}" ] || printf 'export %s=%q\n' "$v" "${!v}"
	done
	printf 'bash %q/abi-tests/vm/net-setup.sh "$VM_NET" || exit 125\n' "$REPO"
	printf 'export VM_NET=$(cat /run/rdmacm-net-mode)\n'
	printf '%q ' "$@"
	echo
} >"$share/cmd.sh"

# The console streams through sed -u (drops CRs and the power-off line) and
# is kept for the diagnosis of a failed boot.
# tsc=reliable: under TCG the clocksource watchdog can declare the TSC unstable
# mid-run; the switch patches kernel text and once panicked 7.3 (int3 oops in
# sched_clock_cpu). Trusting the emulated TSC avoids the runtime switch.
boot() {
	timeout --foreground -k 5 "$timeout" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 2G -nic none \
		-display none -monitor none -serial stdio -no-reboot \
		-kernel "$K/vmlinuz" -initrd "$K/initrd.gz" \
		-append "console=ttyS0 quiet loglevel=1 panic=-1 tsc=reliable" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$share",mount_tag=results,security_model=none,multidevs=remap \
		</dev/null 2>"$tmp/qemu.err" |
		sed -u -e 's/\r$//' -e '/reboot: Power down/d' | tee "$tmp/console"
	q=${PIPESTATUS[0]}
}
set +e
boot
# A kernel panic before /init started the command (the guest's own boot:
# 7.3 under TCG once hit an int3 oops while patching kernel text during its
# initcalls) is the emulator's, not a result: boot once more, and say so.
if ((q != 124 && q != 137)) && [ ! -f "$share/started" ] && [ ! -f "$share/rc" ] &&
	grep -q 'Kernel panic' "$tmp/console"; then
	echo "run.sh: the guest (kernel $kernel) panicked while booting, before the command started; booting again"
	rm -f "$share/bed-broken" "$share/insmod-failed"
	boot
fi
set -e
if ((q == 124 || q == 137)); then
	echo "run.sh: TIMEOUT: the guest (kernel $kernel) ran past ${timeout}s and was killed"
	exit 124
fi
if [ -f "$share/bed-broken" ]; then
	broken "$(head -n1 "$share/bed-broken")"
fi
if [ ! -f "$share/rc" ]; then
	cause=$(grep -m1 -E 'Kernel panic|BED BROKEN' "$tmp/console" | sed -e 's/^\[[ 0-9.]*\] //' -e 's/^BED BROKEN: //' || true)
	[ -n "$cause" ] || cause=$(grep -m1 -v '^$' "$tmp/qemu.err" | sed 's/^/qemu: /' || true)
	[ -n "$cause" ] || cause="qemu exited with $q"
	broken "the guest did not finish: $cause"
fi
rc=$(cat "$share/rc")
[[ $rc =~ ^[0-9]+$ ]] || broken "the guest reported a bad exit code '$rc'"
exit "$rc"
