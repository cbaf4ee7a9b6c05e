#!/usr/bin/env bash
# The tiny guest the libvirt world boots: Debian's cloud kernel and a busybox initramfs, both
# from Debian's packages (shared/notes/hypervisor-real.md: it reaches /init in about 4 s under
# QEMU's TCG). Its /init (hack/guest/init) reads the server's metadata from Nova's config drive
# and keeps memory busy as the metadata says:
#   drainctl.test:resident  MiB of non-zero pages held in memory (default 48)
#   drainctl.test:dirty     MiB a second of those pages written again (default 0): a guest
#                           that writes faster than the migration copies never converges
#
#   hack/guest/build.sh OUT    writes OUT/vmlinuz and OUT/initrd.gz (idempotent: kept when
#                              they are newer than this script and hack/guest/init)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: hack/guest/build.sh OUT}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ -s "$out/initrd.gz" ] && [ -s "$out/vmlinuz" ] && [ "$out/initrd.gz" -nt "$0" ] && [ "$out/initrd.gz" -nt "$here/init" ]; then
	exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The kernel: the package linux-image-cloud-amd64 depends on, fetched (not installed).
kernel_pkg() { apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }
kpkg="$(kernel_pkg)"
[ -n "$kpkg" ] || { apt-get update -qq && kpkg="$(kernel_pkg)"; } # a machine whose package lists are gone
[ -n "$kpkg" ] || { echo "guest: apt knows no linux-image-cloud-amd64" >&2; exit 1; }
(cd "$work" && apt-get download "$kpkg" >/dev/null 2>&1) || { echo "guest: apt-get download $kpkg failed" >&2; exit 1; }
dpkg-deb -x "$work"/linux-image-*.deb "$work/k"
kver="$(ls "$work/k/lib/modules")"

# The initramfs: busybox, the modules that read the config drive (an IDE CD-ROM with an
# ISO 9660 file system; the cloud kernel builds them as modules), and /init.
busybox=/bin/busybox # busybox-static's: the initramfs has no libc
[ -x "$busybox" ] || { echo "guest: busybox-static is not installed" >&2; exit 1; }
r="$work/root"
mkdir -p "$r"/{bin,dev,proc,sys,mnt,lib/modules,tmp}
cp "$busybox" "$r/bin/busybox"
for m in scsi_common scsi_mod libata ata_piix cdrom sr_mod isofs; do
	cp "$(find "$work/k/lib/modules/$kver" -name "$m.ko" | head -1)" "$r/lib/modules/"
done
echo "scsi_common scsi_mod libata ata_piix cdrom sr_mod isofs" >"$r/lib/modules/order"
cp "$here/init" "$r/init"
chmod +x "$r/init"
(cd "$r" && find . | "$r/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -9) >"$work/initrd.gz"
cp "$work/k/boot/vmlinuz-$kver" "$work/vmlinuz"
mv "$work/vmlinuz" "$out/vmlinuz"
mv "$work/initrd.gz" "$out/initrd.gz"
echo "guest: $out/vmlinuz ($kver) and $out/initrd.gz" >&2
