#!/usr/bin/env bash
# Build build/slowburn_VERSION_amd64.deb from `make install` into a staging
# root (PREFIX=/usr, the binary in /usr/sbin: an administrator's tool that
# needs root), with the systemd unit where systemd looks, a copyright and a
# changelog where Debian's policy wants them, md5sums, and Depends computed
# by dpkg-shlibdeps from the binary's own ELF dependencies (the demo's MPI
# workload's libraries are Recommends: slowburn itself loads no MPI; python3
# is a Depends for the PyTorch demo's script, which lintian holds to it).
# Usage: scripts/make-deb.sh BUILD VERSION
set -euo pipefail
umask 022 # the package's files 0644 and directories 0755 whatever the caller's umask
build=${1:?BUILD}
version=${2:?VERSION}
src=$(cd "$(dirname "$0")/.." && pwd)
stage="$build/deb"
root="$stage/root"
arch=$(dpkg --print-architecture)
deb="$build/slowburn_${version}_${arch}.deb"

rm -rf "$stage" "$build"/slowburn_*.deb # an older version's package is not this one
mkdir -p "$root"
root_abs=$(cd "$root" && pwd)
# The same BUILD as the caller's (relative to the source tree): another
# spelling of it would be another set of targets, all rebuilt.
(cd "$src" && make --no-print-directory install DESTDIR="$root_abs" PREFIX=/usr BINDIR=/usr/sbin BUILD="$build") >/dev/null
# Debian ships stripped binaries (lintian: unstripped-binary-or-object).
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$root/usr/sbin/slowburn" "$root/usr/libexec/slowburn/slowburn-mpi-workload"
# Man pages compressed, as man-db expects in a package.
gzip -9n "$root"/usr/share/man/man8/*.8

# The unit where systemd finds it, running the packaged binary.
unit="$root/lib/systemd/system/slowburn-probe.service"
install -D -m 0644 "$src/deploy/systemd/slowburn-probe.service" "$unit"
sed -i -e 's|/usr/local/bin/slowburn|/usr/sbin/slowburn|g' \
	-e 's|file:/usr/local/share/slowburn/README.md|man:slowburn-probe(8)|' "$unit"
rm -f "$root/usr/share/slowburn/systemd/slowburn-probe.service"
rmdir "$root/usr/share/slowburn/systemd" 2>/dev/null || true

doc="$root/usr/share/doc/slowburn"
mkdir -p "$doc"
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: slowburn
Comment: Built from the slowburn source tree by scripts/make-deb.sh.

Files: *
Copyright: 2026 the slowburn developers
License: proprietary
 No licence has been chosen yet; until one is, the copyright holders reserve
 all rights. Ask the slowburn developers before redistributing this package.
EOF
date_rfc=$(date -R -d "@$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)")
cat >"$stage/changelog.Debian" <<EOF
slowburn ($version) unstable; urgency=medium

  * Built from the slowburn source tree (CHANGELOG.md holds its history).

 -- slowburn developers <slowburn-dev@example.org>  $date_rfc
EOF
# A native package (no Debian revision): its changelog is changelog.gz.
gzip -9n -c "$stage/changelog.Debian" >"$doc/changelog.gz"

# Depends from what the binaries link (dpkg-shlibdeps reads a debian/control).
mkdir -p "$stage/src/debian"
printf 'Source: slowburn\n\nPackage: slowburn\nArchitecture: any\n' >"$stage/src/debian/control"
shlibs=$(cd "$stage/src" && dpkg-shlibdeps -O "$root_abs/usr/sbin/slowburn" \
	-dRecommends "$root_abs/usr/libexec/slowburn/slowburn-mpi-workload" 2>"$root_abs/../shlibdeps.err") ||
	{
		cat "$stage/shlibdeps.err" >&2
		exit 1
	}
depends=$(sed -n 's/^shlibs:Depends=//p' <<<"$shlibs")
recommends=$(sed -n 's/^shlibs:Recommends=//p' <<<"$shlibs")

mkdir -p "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: slowburn
Version: $version
Architecture: $arch
Maintainer: slowburn developers <slowburn-dev@example.org>
Installed-Size: $size
Depends: $depends, python3
Recommends: ${recommends:+$recommends, }python3-torch, openmpi-bin
Section: admin
Priority: optional
Homepage: https://github.com/slowburn/slowburn
Description: name the straggler rank of a training job, and why
 slowburn attaches CO-RE eBPF programs to collective-library calls (MPI,
 NCCL, gloo), RDMA verbs, PCIe AER and link events and NVIDIA driver
 signals, and names the rank that makes a synchronised training job wait
 (the one that arrives last, not the ones that wait longest), with the
 likely cause found layer by layer: host, GPU, PCIe, fabric.
 .
 It runs as ad-hoc tracing sessions (slowburn trace), a continuous probe
 with Prometheus metrics (slowburn probe, systemd unit slowburn-probe),
 and named tools for incidents (aer, pcie, xid, fabric, qp, health).
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
	>"$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
