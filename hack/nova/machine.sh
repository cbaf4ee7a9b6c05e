#!/usr/bin/env bash
# A compute machine of the libvirt world (hack/nova.sh, NOVA_VIRT=libvirt): run by nova.sh
# inside the machine's own network namespace and a mount and UTS namespace of its own, so
# that its libvirt daemons, sshd and (started later by nsenter) nova-compute see their own
# /etc/libvirt, /run/libvirt, /var/lib/libvirt, /root/.ssh, its own disk at the world's one
# instances path and the world's /etc/hosts, and its hostname is the host's.
# Every process of the namespace dies together when the machine is killed (nova.sh kill-host).
#
#   machine.sh STATE HOST
set -euo pipefail
S="$1" h="$2"
H="$S/hosts/$h"
hostname "$h"
for d in /etc/libvirt /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt /root/.ssh /run/sshd; do
	mkdir -p "$d"
done
mount --bind "$H/etc" /etc/libvirt
mount --bind "$H/run" /run/libvirt
mount --bind "$H/lib" /var/lib/libvirt
mount --bind "$H/log" /var/log/libvirt
mount --bind "$H/cache" /var/cache/libvirt
mount --bind "$S/ssh" /root/.ssh
# Each machine its own disk, unless the world's instances are shared (shared-instances: the
# NFS or Ceph of a real cloud, where a dead host's guests are rebuilt on their own disks).
[ -e "$S/shared-instances" ] || mount --bind "$H/instances" "$S/instances"
mount --bind "$S/hosts.txt" /etc/hosts
mount -t tmpfs -o mode=0755 tmpfs /run/sshd
echo $$ >"$H/machine.pid"

/usr/sbin/virtlogd --pid-file "$H/run/virtlogd.pid" >>"$H/log/virtlogd.out" 2>&1 &
/usr/sbin/libvirtd --listen --pid-file "$H/run/libvirtd.pid" >>"$H/log/libvirtd.out" 2>&1 &
/usr/sbin/sshd -D -f "$H/sshd_config" >>"$H/log/sshd.out" 2>&1 &
# The machine lives while any of them does; nova-compute joins it later.
wait
