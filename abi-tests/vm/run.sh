#!/usr/bin/env bash
# run.sh — run one command in a fresh soft-RoCE guest.
#
#   abi-tests/vm/run.sh --kernel 6.1|new [--timeout SECONDS] -- COMMAND...
#
# Boots the chosen Debian kernel under qemu (TCG, no NIC), with the host's
# root filesystem read-only as the guest's, sets up soft-RoCE (net-setup.sh:
# dummy d0 192.0.2.1 + fd00::1 with rxe0; on kernels >= 6.18 also two network
# namespaces a/b joined by a veth pair, 192.0.2.1/rxe_a and 192.0.2.2/rxe_b),
# runs COMMAND as root in the repository directory, streams its output and
# exits with its exit code. A broken bed says so in one line and exits 125;
# a run past the timeout is killed and exits 124.
# Results: the command can write files into $VM_OUT (inside the guest), which
# is the host directory given by --out (default: a temporary one).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
kernel=6.1 timeout=300 out=""
while (($#)); do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 --kernel 6.1|new [--timeout S] [--out DIR] -- COMMAND..." >&2; exit 2 ;;
	esac
done
(($#)) || { echo "run.sh: no command" >&2; exit 2; }
K=$REPO/.cache/vm/k-$kernel
[ -f "$K/ready" ] || { echo "BED BROKEN: kernel '$kernel' not prepared (run abi-tests/vm/setup.sh)"; exit 125; }
command -v qemu-system-x86_64 >/dev/null || { echo "BED BROKEN: qemu-system-x86_64 missing"; exit 125; }
tmp=$(mktemp -d /tmp/rdmacm-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
share=${out:-$tmp/out}
mkdir -p "$share"
rm -f "$share/rc" "$share/cmd.sh"
echo "$REPO" >"$share/cwd"
{
	echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8'
	echo 'export VM_OUT=/tmp/vmout VM_KERNEL='"$kernel"
	echo 'bash abi-tests/vm/net-setup.sh || { echo "BED BROKEN: soft-RoCE setup failed"; exit 125; }'
	printf '%q ' "$@"
	echo
} >"$share/cmd.sh"
timeout --foreground -k 5 "$timeout" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 2G -nic none \
	-display none -monitor none -serial stdio -no-reboot \
	-kernel "$K/vmlinuz" -initrd "$K/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=1 panic=-1" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$share",mount_tag=results,security_model=none,multidevs=remap </dev/null |
	tr -d '\r'
q=${PIPESTATUS[0]}
if ((q == 124 || q == 137)); then
	echo "run.sh: timed out after ${timeout}s (kernel $kernel)"
	exit 124
fi
if [ ! -f "$share/rc" ]; then
	echo "BED BROKEN: the guest did not report an exit code (kernel $kernel, qemu exit $q)"
	exit 125
fi
exit "$(cat "$share/rc")"
