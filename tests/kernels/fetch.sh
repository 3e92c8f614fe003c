#!/usr/bin/env bash
# Download one Debian kernel package and extract it into DIR (cached: a kernel
# already extracted is not downloaded again). Prints DIR/<release> on stdout:
# it holds boot/vmlinuz-<release> and lib/modules/<release>.
#   tests/kernels/fetch.sh DIR bookworm            Debian 12's 6.1
#   tests/kernels/fetch.sh DIR bookworm-backports  the 6.12 backports kernel
# apt runs with its own sources, lists and cache under DIR/apt: the system's
# apt configuration is read, never changed.
set -euo pipefail
dir=$(realpath -m "$1")
suite=$2
apt_dir=$dir/apt/$suite
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"

# Already extracted for this suite: done, no network.
if [ -f "$dir/$suite.release" ]; then
	release=$(cat "$dir/$suite.release")
	if [ -f "$dir/$release/boot/vmlinuz-$release" ]; then
		echo "$dir/$release"
		exit 0
	fi
fi

cat >"$apt_dir/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main
EOF
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
	-o "Dir::State::status=/var/lib/dpkg/status" -o "APT::Get::List-Cleanup=0"
	-o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -q)
echo "kernels: apt-get update ($suite)" >&2
apt-get "${apt_opts[@]}" update >&2

# linux-image-amd64 (of that suite) depends on the current kernel package.
candidate=$(apt-cache "${apt_opts[@]}" policy linux-image-amd64 |
	awk '/Candidate:/ {print $2}')
image=$(apt-cache "${apt_opts[@]}" depends "linux-image-amd64=$candidate" |
	awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$image" ] || {
	echo "kernels: no linux-image package found in $suite" >&2
	exit 1
}
release=${image#linux-image-}
echo "kernels: apt-get download $image" >&2
(cd "$apt_dir/cache/archives" && apt-get "${apt_opts[@]}" download "$image" >&2)
deb=$(ls "$apt_dir"/cache/archives/"${image}"_*.deb | head -1)
rm -rf "$dir/$release.tmp"
dpkg-deb -x "$deb" "$dir/$release.tmp"
# Modules are decompressed here once, so that a tiny init can finit_module
# them whatever decompressors the kernel has built in.
find "$dir/$release.tmp/lib/modules" \( -name '*.ko.xz' -o -name '*.ko.zst' \) -print0 |
	xargs -0 -r -n 200 sh -c 'for f; do case $f in
		*.xz) xz -d -q "$f" ;; *.zst) zstd -d -q --rm "$f" ;; esac; done' sh
/sbin/depmod -b "$dir/$release.tmp" "$release"
rm -rf "${dir:?}/$release"
mv "$dir/$release.tmp" "$dir/$release"
echo "$release" >"$dir/$suite.release"
echo "$dir/$release"
