#!/usr/bin/env bash
# Regenerates vmlinux/vmlinux.h from a kernel's BTF (default: the running
# kernel's). CO-RE relocations make the result portable: the BPF objects
# built against it load on other kernels with BTF, and what this kernel
# lacks is declared locally in bpf/compat.bpf.h with ___flavour suffixes.
#
#   vmlinux/gen-vmlinux.sh [BTF_FILE]
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
out=$(dirname "$0")/vmlinux.h
if [ ! -r "$btf" ]; then
	echo "gen-vmlinux: $btf not readable: the kernel needs CONFIG_DEBUG_INFO_BTF=y" >&2
	exit 1
fi
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out from $btf ($(wc -l < "$out") lines)"
