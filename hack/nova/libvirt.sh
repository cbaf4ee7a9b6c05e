# The libvirt world's machines, sourced by hack/nova.sh when NOVA_VIRT=libvirt: each compute
# host is a machine of its own (shared/notes/hypervisor-real.md): a network namespace with its
# address on a bridge, its own libvirtd and virtlogd (QEMU's TCG: virt_type = qemu), its own
# sshd (Nova copies a cold move's disks over ssh) and its own nova-compute with Nova's libvirt
# driver, its instances on its own disk (a live move of them is a block migration). The
# control plane listens on the bridge's address; guests are hack/guest/build.sh's.

BRIDGE=drainctl0
NET=10.213.0 # the bridge's own subnet: addresses of this world's machines only
CP_ADDR=$NET.1

host_ns() { echo "drainctl-$1"; }
host_ip() { # compute-N -> $NET.(10+N)
	local n="${1##*-}"
	echo "$NET.$((10 + n))"
}

net_up() {
	ip link show "$BRIDGE" >/dev/null 2>&1 || {
		ip link add "$BRIDGE" type bridge
		ip addr add "$CP_ADDR/24" dev "$BRIDGE"
	}
	ip link set "$BRIDGE" up
	local h ns
	for h in "${HOSTS[@]}"; do
		ns="$(host_ns "$h")"
		ip netns list | grep -qw "$ns" || ip netns add "$ns"
		if ! ip link show "dc-$h" >/dev/null 2>&1; then
			ip link add "dc-$h" type veth peer name eth0 netns "$ns"
			ip link set "dc-$h" master "$BRIDGE" up
			ip -n "$ns" addr add "$(host_ip "$h")/24" dev eth0
		fi
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
	done
}

net_down() {
	local h
	for h in "${HOSTS[@]}"; do
		ip link del "dc-$h" 2>/dev/null || true
		ip netns del "$(host_ns "$h")" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
}

# configure_hosts: each machine's libvirt, sshd and nova-compute configuration.
configure_hosts() {
	# libvirt's QEMU driver resolves its built-in user before it reads qemu.conf (which makes
	# it root here): the user and group Debian's libvirt-daemon-system would create.
	getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
	getent passwd libvirt-qemu >/dev/null ||
		useradd --system --no-create-home --gid libvirt-qemu --shell /usr/sbin/nologin libvirt-qemu
	mkdir -p "$S/ssh"
	[ -f "$S/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$S/ssh/id_ed25519"
	cp "$S/ssh/id_ed25519.pub" "$S/ssh/authorized_keys"
	printf 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' >"$S/ssh/config"
	chmod 700 "$S/ssh"
	mkdir -p "$S/instances" # each machine's own $H/instances is mounted here (machine.sh)
	# The machines' names: a cold move's scp goes to the source by its host name.
	{
		echo "127.0.0.1 localhost"
		for h in "${HOSTS[@]}"; do echo "$(host_ip "$h") $h"; done
	} >"$S/hosts.txt"
	local h H ip n=0
	for h in "${HOSTS[@]}"; do
		H="$S/hosts/$h"
		ip="$(host_ip "$h")"
		mkdir -p "$H"/{etc,run,lib,log,cache,instances,lock}
		cp -r /etc/libvirt/. "$H/etc/"
		rm -f "$H/etc/qemu/networks/autostart/"* 2>/dev/null || true
		cat >"$H/etc/libvirtd.conf" <<EOF
listen_tls = 0
listen_tcp = 1
listen_addr = "$ip"
auth_tcp = "none"
auth_unix_rw = "none"
host_uuid = "00000000-0000-4000-8000-00000000000$n"
log_outputs = "3:file:$H/log/libvirtd.log"
EOF
		cat >"$H/etc/qemu.conf" <<EOF
user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
migration_address = "$ip"
EOF
		cat >"$H/sshd_config" <<EOF
ListenAddress $ip
HostKey $S/ssh/id_ed25519
PidFile none
PermitRootLogin prohibit-password
AuthorizedKeysFile $S/ssh/authorized_keys
StrictModes no
UsePAM no
Subsystem sftp internal-sftp
EOF
		cat >"$S/etc/$h.conf" <<EOF
[DEFAULT]
host = $h
my_ip = $ip
compute_driver = libvirt.LibvirtDriver
# Every machine sees its own disk at one path: Nova names a cold move's source files by the
# destination's instances_path (scp HOST:\$instances_path/...), so the path is the same on all.
instances_path = $S/instances
log_file = $S/log/$h-app.log
[libvirt]
virt_type = qemu
cpu_mode = none
live_migration_scheme = tcp
live_migration_inbound_addr = $ip
# The world's link between machines: a guest's copy takes seconds, as on a busy real link.
live_migration_bandwidth = ${NOVA_MIGRATION_MIBPS:-8}
[oslo_concurrency]
lock_path = $H/lock
EOF
		n=$((n + 1))
	done
}

start_host() { # a machine powered on: its daemons, then its nova-compute
	local h="$1" ns
	ns="$(host_ns "$h")"
	ours "$S/pid/$h-machine" >/dev/null || {
		rm -f "$S/hosts/$h/machine.pid" "$S/hosts/$h/run/libvirt-sock"
		spawn "$h-machine" ip netns exec "$ns" unshare --mount --uts --propagation private \
			"$root/hack/nova/machine.sh" "$S" "$h"
		wait_for "$h's libvirtd" 60 test -S "$S/hosts/$h/run/libvirt-sock"
	}
	start_compute "$h"
}

# kill_host: the machine loses its power: every process of its namespace (libvirtd, its
# guests' QEMU, sshd, nova-compute) killed at once, without warning.
kill_host() {
	local h="$1" ns
	ns="$(host_ns "$h")"
	ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
	for _ in $(seq 50); do
		[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
		sleep 0.1
	done
	rm -f "$S/pid/$h-machine" "$S/pid/$h"
}

# kill_libvirtd: the machine's libvirt daemon dies (its guests run on).
kill_libvirtd() {
	local pid
	pid="$(cat "$S/hosts/$1/run/libvirtd.pid" 2>/dev/null)" && kill -KILL "$pid" 2>/dev/null || true
}

start_libvirtd() {
	local m
	m="$(cat "$S/hosts/$1/machine.pid")"
	nsenter -t "$m" -m -u -n setsid /usr/sbin/libvirtd --listen --pid-file "$S/hosts/$1/run/libvirtd.pid" \
		>>"$S/hosts/$1/log/libvirtd.out" 2>&1 </dev/null &
	wait_for "$1's libvirtd" 60 test -S "$S/hosts/$1/run/libvirt-sock"
}

# libvirt_compute HOST: the command that runs HOST's nova-compute inside its machine.
libvirt_compute() {
	local m
	m="$(cat "$S/hosts/$1/machine.pid")"
	echo nsenter -t "$m" -m -u -n
}

libvirt_world() { # the guest's kernel, ramdisk and machine image, and its flavor
	"$root/hack/guest/build.sh" "$S/guest" || die "the guest image could not be built"
	py "$root/hack/nova/catalog.py" --guest "$S/env" "$S/guest"
}

libvirt_down() {
	local h
	for h in "${HOSTS[@]}"; do kill_host "$h"; done
	net_down
}
