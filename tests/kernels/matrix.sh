#!/usr/bin/env bash
# make test-kernels: the guest suite (tests/kernels/guest) on Debian 12's 6.1,
# the 6.12 backports kernel (each booted under QEMU, TCG) and on this
# machine's own kernel (run directly: no QEMU); one line per kernel, the
# feature table in docs/kernel-support.md. Exit 1 when a test failed or a
# guest hung.
#   tests/kernels/matrix.sh [BUILD]        SB_KERNELS="bookworm" to boot fewer
#   SB_TESTS=check,aer: only these guest tests (default: all); SB_HOST=0: no host run
set -uo pipefail
build=$(realpath "${1:-build}")
here=$(dirname "$(realpath "$0")")
src=$(realpath "$here/../..")
kdir=$build/kernels
suites=${SB_KERNELS:-bookworm bookworm-backports}
timeout_s=${SB_GUEST_TIMEOUT:-420}
mkdir -p "$kdir/out"
started=$(date +%s)

for tool in qemu-system-x86_64 /sbin/modprobe /sbin/depmod; do
	command -v "$tool" >/dev/null || {
		echo "kernels: $tool missing: make deps (qemu-system-x86, kmod)" >&2
		exit 1
	}
done
gcc -static -O2 -Wall -Wextra -Werror -o "$kdir/init" "$here/init.c" || exit 1

runs=()
status=0
for suite in $suites; do
	kernel=$("$here/fetch.sh" "$kdir" "$suite") || {
		echo "kernels: cannot fetch the $suite kernel" >&2
		exit 1
	}
	release=$(basename "$kernel")
	out=$kdir/out/$release
	python3 "$here/boot.py" --kernel "$kernel" --init "$kdir/init" --suite "$here/guest/suite.sh" \
		--out "$out" --build "$build" --src "$src" --timeout "$timeout_s" || status=1
	python3 "$here/formats.py" "$out" "$src/tests/fixtures/tracefs" >/dev/null
	runs+=("$out")
done

# This machine's kernel: the same suite, directly (its AER test skips
# itself where the kernel has no ras:aer_event). SB_HOST=0 leaves it out.
if [ "${SB_HOST:-1}" = 1 ]; then
	release=$(uname -r)
	out=$kdir/out/$release
	rm -rf "$out"
	mkdir -p "$out/mon"
	host_start=$(date +%s.%N)
	SB_OUT=$out sb_build=$build sb_release=$release sh "$here/guest/suite.sh" >"$out/console.log" 2>&1
	awk "BEGIN {printf \"%.1f\\n\", $(date +%s.%N) - $host_start}" >"$out/wall_s"
	mkdir -p "$out/formats"
	python3 "$here/formats.py" "$out" "$src/tests/fixtures/tracefs" >/dev/null
	runs+=("$out")
fi

# The committed tables (docs/kernel-support.md, docs/kernels.md) only from
# the whole matrix; a part of it (the knobs above) reports into the build
# directory.
if [ -z "${SB_KERNELS:-}${SB_TESTS:-}" ] && [ "${SB_HOST:-1}" = 1 ]; then
	report=(--doc "$src/docs/kernel-support.md" --readme "$src/docs/kernels.md")
else
	report=(--doc "$kdir/kernel-support.md")
fi
python3 "$here/table.py" "${report[@]}" --elapsed $(($(date +%s) - started)) "${runs[@]}" || status=1
exit $status
