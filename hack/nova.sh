#!/usr/bin/env bash
# A real OpenStack compute control plane for drainctl's tests, from Debian bookworm's packages
# (OpenStack Zed), on 127.0.0.1 only: MariaDB and RabbitMQ, keystone, placement, glance,
# neutron-server (ML2, no agents), nova api/conductor/scheduler and three nova-compute with
# the fake virt driver (fake.FakeLiveMigrateDriver) as compute-0..2.
#
# NOVA_VIRT=libvirt at `up` makes the libvirt world instead (hack/nova/libvirt.sh): the same
# control plane on a bridge's address, and compute-0..2 real machines in network namespaces,
# each with its own libvirtd, QEMU guests (TCG) and nova-compute with Nova's libvirt driver;
# servers boot hack/guest/build.sh's tiny guest. Its state defaults to .nova-libvirt/.
#
#   hack/nova.sh install            apt packages (a fresh machine; CI runs it)
#   hack/nova.sh ready              exits 0 when they are installed
#   hack/nova.sh up [STATE]         a fresh world (stops and wipes the last one first); prints
#                                   the env file tests read: DRAINCTL_REAL_NOVA=<that file>
#   hack/nova.sh down [STATE]       stops what `up` started, by PID (nothing else)
#   hack/nova.sh stop-compute HOST [STATE] / start-compute HOST [STATE]
#                                   a host's nova-compute dies / starts again (the fake
#                                   driver forgets its guests when it stops)
#   hack/nova.sh kill-host HOST [STATE] / start-host HOST [STATE]        (libvirt world)
#                                   the machine loses its power (every process of its
#                                   namespace, its guests with it) / is powered on again
#   hack/nova.sh kill-libvirtd HOST [STATE] / start-libvirtd HOST [STATE] (libvirt world)
#
# STATE defaults to .nova/ in the repository. Facts this rests on: shared/notes/nova-real.md,
# copied where a line needs one. Nova's service_down_time is 6 s here (60 s by default) so
# that a dead host is seen as down within a test; report_interval 2 s (NOVA_SERVICE_DOWN_TIME
# and NOVA_REPORT_INTERVAL at `up` set others).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/nova/libvirt.sh
. "$root/hack/nova/libvirt.sh"
PY=/usr/bin/python3 # python3 on PATH may be another interpreter (pyenv)
HOSTS=(compute-0 compute-1 compute-2)
PASS=drainctl-test # every service user's and the admin's password: a throwaway world on loopback
log() { echo "nova.sh: $*" >&2; }
die() { log "$*"; exit 1; }

packages=(python3-nova python3-keystone python3-placement python3-glance python3-neutron
	nova-common neutron-common glance-common mariadb-server rabbitmq-server
	uwsgi uwsgi-plugin-python3 python3-openstacksdk curl
	# the libvirt world: real guests under QEMU's TCG, their config drives, cold moves' ssh
	libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils
	python3-libvirt genisoimage openssh-server openssh-client busybox-static iproute2 sudo)

install() {
	local missing=()
	for p in "${packages[@]}"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	# policy-rc.d (exit 101) keeps mariadb and rabbitmq from starting at install: keep it.
	if [ ! -x /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
	fi
	log "installing ${#missing[@]} packages (about 3 minutes on a fresh machine)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

state() {
	VIRT="${NOVA_VIRT:-fake}"
	local dflt="$root/.nova"
	[ "$VIRT" = libvirt ] && dflt="$root/.nova-libvirt"
	S="${1:-$dflt}"
	mkdir -p "$S"
	S="$(cd "$S" && pwd)"
	[ -f "$S/virt" ] && [ "$cmd" != up ] && VIRT="$(cat "$S/virt")"
	ADDR=127.0.0.1 EPMD_PORT=4369 DIST_PORT=25672 RABBIT_NODE=rabbit@localhost
	if [ "$VIRT" = libvirt ]; then # a world of its own beside the fake one
		ADDR="$CP_ADDR" EPMD_PORT=4370 DIST_PORT=25673 RABBIT_NODE=rabbit-libvirt@localhost
	fi
	DB="mysql+pymysql://openstack:$PASS@localhost/%s?unix_socket=$S/mysql/sock&charset=utf8"
	RABBIT="rabbit://guest:guest@$ADDR:5672/"
}

# ---- processes: started in their own session, a PID file each, stopped only by that PID ----

# spawn NAME CMD...: starts CMD in the background, its output in log/NAME.log.
spawn() {
	local name="$1"
	shift
	mkdir -p "$S/log" "$S/pid"
	setsid "$@" >>"$S/log/$name.log" 2>&1 </dev/null &
	echo $! >"$S/pid/$name"
}

# ours PIDFILE: the PID in it, if that process is still the one we started (a PID reused by
# another program after ours ended is not ours to kill).
ours() {
	local pid
	pid="$(cat "$1" 2>/dev/null)" || return 1
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	[ "$(stat -c %Y "/proc/$pid")" -ge "$(($(stat -c %Y "$1") - 5))" ] || return 1
	echo "$pid"
}

# stop NAME: SIGTERM to its session (uwsgi's workers, rabbit's erlang), then SIGKILL.
stop() {
	local f="$S/pid/$1" pid
	if pid="$(ours "$f")"; then
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			[ -d "/proc/$pid" ] || break
			sleep 0.1
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

down() {
	[ "$VIRT" != libvirt ] || libvirt_down
	[ -d "$S/pid" ] || return 0
	local n
	for n in $(ls "$S/pid"); do
		[ "$n" = mariadb ] || [ "$n" = rabbitmq ] || [ "$n" = epmd ] || stop "$n"
	done
	stop rabbitmq
	stop epmd
	stop mariadb
}

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
	local what="$1" secs="$2"
	shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || die "$what did not come up within ${secs}s (logs in $S/log)"
		sleep 0.5
	done
}

py() { "$PY" "$@"; }
manage() { py -c 'import sys; from '"$1"' import main; sys.argv[0] = "'"$2"'"; sys.exit(main())' "${@:3}"; }

# ---- configuration ----

authtoken() { # [keystone_authtoken] for a service user
	cat <<EOF
[keystone_authtoken]
www_authenticate_uri = http://$ADDR:5000
auth_url = http://$ADDR:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = $1
password = $PASS
EOF
}

service_user() { # a keystoneauth section for calls a service makes to another
	cat <<EOF
[$1]
auth_url = http://$ADDR:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
region_name = RegionOne
project_name = service
username = $2
password = $PASS
EOF
}

configure() {
	mkdir -p "$S/etc" "$S/lock" "$S/run"
	cat >"$S/etc/keystone.conf" <<EOF
[DEFAULT]
log_file = $S/log/keystone-app.log
[database]
connection = $(printf "$DB" keystone)
[token]
provider = fernet
[fernet_tokens]
key_repository = $S/keystone/fernet-keys
[credential]
key_repository = $S/keystone/credential-keys
EOF
	cat >"$S/etc/placement.conf" <<EOF
[DEFAULT]
log_file = $S/log/placement-app.log
[placement_database]
connection = $(printf "$DB" placement)
[api]
auth_strategy = keystone
$(authtoken placement)
EOF
	cp /etc/glance/glance-api-paste.ini "$S/etc/glance-api-paste.ini"
	cat >"$S/etc/glance-api.conf" <<EOF
[DEFAULT]
bind_host = $ADDR
bind_port = 9292
workers = 0
log_file = $S/log/glance-app.log
enabled_backends = local:file
[database]
connection = $(printf "$DB" glance)
[paste_deploy]
flavor = keystone
config_file = $S/etc/glance-api-paste.ini
[glance_store]
default_backend = local
[local]
filesystem_store_datadir = $S/glance/images
[os_glance_staging_store]
filesystem_store_datadir = $S/glance/staging
[os_glance_tasks_store]
filesystem_store_datadir = $S/glance/tasks
$(authtoken glance)
[oslo_concurrency]
lock_path = $S/lock
EOF
	cp /usr/share/neutron-common/api-paste.ini "$S/etc/neutron-api-paste.ini"
	cat >"$S/etc/neutron.conf" <<EOF
[DEFAULT]
bind_host = $ADDR
bind_port = 9696
core_plugin = ml2
service_plugins = router
auth_strategy = keystone
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
transport_url = $RABBIT
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
api_paste_config = $S/etc/neutron-api-paste.ini
log_file = $S/log/neutron-app.log
state_path = $S/neutron
[database]
connection = $(printf "$DB" neutron)
[ml2]
type_drivers = flat
tenant_network_types =
mechanism_drivers =
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
$(authtoken neutron)
[oslo_concurrency]
lock_path = $S/lock
EOF
	cp /etc/nova/api-paste.ini "$S/etc/nova-api-paste.ini"
	cat >"$S/etc/nova.conf" <<EOF
[DEFAULT]
transport_url = $RABBIT
enabled_apis = osapi_compute
osapi_compute_listen = $ADDR
osapi_compute_listen_port = 8774
osapi_compute_workers = 1
my_ip = $ADDR
compute_driver = fake.FakeLiveMigrateDriver
state_path = $S/nova
instances_path = $S/nova/instances
log_dir = $S/log
# A dead host is seen as down within a test (60 s and 10 s by default; the recovery benchmark
# sets Nova's defaults: NOVA_SERVICE_DOWN_TIME=60 NOVA_REPORT_INTERVAL=10 hack/nova.sh up).
service_down_time = ${NOVA_SERVICE_DOWN_TIME:-6}
report_interval = ${NOVA_REPORT_INTERVAL:-2}
# Nova's own default: a cold move waits in VERIFY_RESIZE until it is confirmed.
resize_confirm_window = 0
$(virt_common)
[api]
auth_strategy = keystone
[api_database]
connection = $(printf "$DB" nova_api)
[database]
connection = $(printf "$DB" nova)
[wsgi]
api_paste_config = $S/etc/nova-api-paste.ini
[conductor]
workers = 1
[scheduler]
workers = 1
discover_hosts_in_cells_interval = 10
[filter_scheduler]
# The fake driver reports huge hosts; the real filters still run (ComputeFilter refuses a
# disabled service, which the canary's forced host skips).
[oslo_concurrency]
lock_path = $S/lock
[oslo_messaging_notifications]
driver = noop
$(authtoken nova)
service_token_roles_required = true
$(service_user placement nova)
$(service_user neutron nova)
$(service_user glance nova)
[service_user]
send_service_user_token = true
auth_url = http://$ADDR:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = nova
password = $PASS
[cinder]
os_region_name = RegionOne
[os_vif_ovs]
[workarounds]
EOF
	local h
	for h in "${HOSTS[@]}"; do
		printf '[DEFAULT]\nhost = %s\nlog_file = %s/log/%s-app.log\n' "$h" "$S" "$h" >"$S/etc/$h.conf"
	done
	[ "$VIRT" != libvirt ] || configure_hosts
}

virt_common() { # nova.conf's [DEFAULT] lines of the libvirt world
	[ "$VIRT" = libvirt ] || return 0
	printf '%s\n' \
		"# The guests read their metadata from a config drive (hack/guest/init): no metadata service." \
		"force_config_drive = True" \
		"# A guest's clean shutdown (ACPI) is waited for at most this long, then it is destroyed." \
		"shutdown_timeout = 10"
}

# ---- the pieces, in the order they need each other ----

start_mariadb() {
	mkdir -p "$S/mysql"
	if [ ! -d "$S/mysql/data/mysql" ]; then
		mariadb-install-db --no-defaults --datadir="$S/mysql/data" --user=root \
			--auth-root-authentication-method=normal --skip-test-db >"$S/log/mariadb-install.log" 2>&1 ||
			die "mariadb-install-db failed (see $S/log/mariadb-install.log)"
	fi
	spawn mariadb mariadbd --no-defaults --datadir="$S/mysql/data" --socket="$S/mysql/sock" \
		--pid-file="$S/mysql/mariadbd.pid" --skip-networking --user=root --innodb-buffer-pool-size=128M \
		--max-connections=500 --innodb-flush-log-at-trx-commit=0 --skip-log-bin
	wait_for mariadb 60 mariadb --no-defaults --socket="$S/mysql/sock" -uroot -e 'select 1'
}

databases() {
	local sql="CREATE USER IF NOT EXISTS 'openstack'@'localhost' IDENTIFIED BY '$PASS';"
	for d in keystone placement glance neutron nova_api nova nova_cell0; do
		sql+="CREATE DATABASE IF NOT EXISTS $d CHARACTER SET utf8; GRANT ALL ON $d.* TO 'openstack'@'localhost';"
	done
	mariadb --no-defaults --socket="$S/mysql/sock" -uroot -e "$sql"
}

start_rabbitmq() {
	mkdir -p "$S/rabbit"
	# epmd started here, on loopback: else erl daemonises its own, which nothing tracks.
	spawn epmd env ERL_EPMD_PORT="$EPMD_PORT" epmd -address 127.0.0.1
	: >"$S/rabbit/enabled_plugins"
	# guest logs in from loopback only; the libvirt world's machines come over its bridge.
	echo 'loopback_users.guest = false' >"$S/rabbit/rabbitmq.conf"
	spawn rabbitmq env HOME="$S/rabbit" RABBITMQ_HOME=/usr/lib/rabbitmq \
		RABBITMQ_MNESIA_BASE="$S/rabbit/mnesia" RABBITMQ_LOG_BASE="$S/log" \
		ERL_EPMD_PORT="$EPMD_PORT" RABBITMQ_DIST_PORT="$DIST_PORT" \
		RABBITMQ_NODENAME="$RABBIT_NODE" RABBITMQ_NODE_IP_ADDRESS=$ADDR \
		RABBITMQ_ENABLED_PLUGINS_FILE="$S/rabbit/enabled_plugins" RABBITMQ_CONFIG_FILE="$S/rabbit/rabbitmq" \
		RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
		/usr/lib/rabbitmq/bin/rabbitmq-server
}

uwsgi_app() { # NAME PORT PROCESSES WSGI-FILE ENV=VALUE
	spawn "$1" uwsgi --plugin python3 --http-socket "$ADDR:$2" --wsgi-file "$4" \
		--master --processes "$3" --die-on-term --lazy-apps \
		--add-header "Connection: close" --env "$5" --buffer-size 65535
}

start_keystone() {
	mkdir -p "$S/keystone"
	manage keystone.cmd.manage keystone-manage --config-file "$S/etc/keystone.conf" db_sync
	manage keystone.cmd.manage keystone-manage --config-file "$S/etc/keystone.conf" fernet_setup --keystone-user root --keystone-group root
	manage keystone.cmd.manage keystone-manage --config-file "$S/etc/keystone.conf" credential_setup --keystone-user root --keystone-group root
	manage keystone.cmd.manage keystone-manage --config-file "$S/etc/keystone.conf" bootstrap \
		--bootstrap-password "$PASS" --bootstrap-admin-url http://$ADDR:5000/v3/ \
		--bootstrap-internal-url http://$ADDR:5000/v3/ --bootstrap-public-url http://$ADDR:5000/v3/ \
		--bootstrap-region-id RegionOne
	uwsgi_app keystone 5000 2 /usr/bin/keystone-wsgi-public "OS_KEYSTONE_CONFIG_DIR=$S/etc"
	wait_for keystone 60 curl -sf http://$ADDR:5000/v3
}

write_env() {
	cat >"$S/env" <<EOF
OS_AUTH_URL=http://$ADDR:5000/v3
OS_USERNAME=admin
OS_PASSWORD=$PASS
OS_PROJECT_NAME=admin
OS_USER_DOMAIN_NAME=Default
OS_PROJECT_DOMAIN_NAME=Default
OS_DOMAIN_NAME=Default
OS_REGION_NAME=RegionOne
OS_IDENTITY_API_VERSION=3
DRAINCTL_NOVA_SCRIPT=$root/hack/nova.sh
EOF
}

# ready: the packages are installed (exit 0), or not (1).
ready() { # both worlds' packages: make test stands up both
	command -v mariadbd >/dev/null && command -v uwsgi >/dev/null && [ -x "$PY" ] &&
		"$PY" -c 'import nova, keystone, placement, glance, neutron, libvirt' 2>/dev/null &&
		[ -x /usr/sbin/libvirtd ] && command -v qemu-system-x86_64 virsh genisoimage >/dev/null && [ -x /usr/sbin/sshd ] &&
		[ -x /bin/busybox ]
}

up() {
	ready || die "the OpenStack packages are missing: run hack/nova.sh install"
	down
	rm -rf "$S"
	mkdir -p "$S/log" "$S/pid"
	echo "$VIRT" >"$S/virt"
	log "state in $S ($VIRT driver)"
	[ "$VIRT" != libvirt ] || net_up
	configure
	start_rabbitmq
	start_mariadb
	databases
	start_keystone
	write_env
	py "$root/hack/nova/catalog.py" "$S/env"
	start_placement
	start_glance
	start_neutron
	start_nova
	wait_for rabbitmq 60 bash -c "exec 3<>/dev/tcp/$ADDR/5672"
	local h
	for h in "${HOSTS[@]}"; do
		if [ "$VIRT" = libvirt ]; then start_host "$h"; else start_compute "$h"; fi
	done
	wait_computes
	py "$root/hack/nova/catalog.py" --world "$S/env"
	if [ "$VIRT" = libvirt ]; then
		libvirt_world
		echo "DRAINCTL_REAL_HYPERVISOR=$S/env"
	else
		echo "DRAINCTL_REAL_NOVA=$S/env"
	fi
}

start_placement() {
	manage placement.cmd.manage placement-manage --config-file "$S/etc/placement.conf" db sync
	uwsgi_app placement 8778 1 /usr/bin/placement-api "OS_PLACEMENT_CONFIG_DIR=$S/etc"
}

start_glance() {
	mkdir -p "$S/glance/images" "$S/glance/staging" "$S/glance/tasks"
	manage glance.cmd.manage glance-manage --config-file "$S/etc/glance-api.conf" db_sync >/dev/null
	spawn glance "$PY" -c 'import sys; from glance.cmd.api import main; sys.argv[0] = "glance-api"; sys.exit(main())' \
		--config-file "$S/etc/glance-api.conf"
}

start_neutron() {
	mkdir -p "$S/neutron"
	manage neutron.db.migration.cli neutron-db-manage --config-file "$S/etc/neutron.conf" upgrade head >/dev/null
	# Zed's neutron answers GET /v2.0/ports with 500 until SQLAlchemy's mappers are configured.
	spawn neutron "$PY" -c '
import sys
import neutron.cmd.eventlet  # eventlet first, as neutron-server does
import neutron.db.migration.models.head  # noqa: every model, so that
import sqlalchemy.orm
sqlalchemy.orm.configure_mappers()  # the Port mapper knows port_forwardings
from neutron.cmd.eventlet.server import main
sys.argv[0] = "neutron-server"
sys.exit(main())' --config-file "$S/etc/neutron.conf"
}

start_nova() {
	mkdir -p "$S/nova/instances"
	local conf=(--config-file "$S/etc/nova.conf")
	manage nova.cmd.manage nova-manage "${conf[@]}" api_db sync
	manage nova.cmd.manage nova-manage "${conf[@]}" cell_v2 map_cell0
	manage nova.cmd.manage nova-manage "${conf[@]}" cell_v2 create_cell --name cell1 >/dev/null
	manage nova.cmd.manage nova-manage "${conf[@]}" db sync
	wait_for placement 60 curl -sf http://$ADDR:8778/
	wait_for rabbitmq 60 bash -c "exec 3<>/dev/tcp/$ADDR/5672"
	spawn nova-conductor "$PY" -c 'import sys; from nova.cmd.conductor import main; sys.argv[0] = "nova-conductor"; sys.exit(main())' "${conf[@]}"
	spawn nova-scheduler "$PY" -c 'import sys; from nova.cmd.scheduler import main; sys.argv[0] = "nova-scheduler"; sys.exit(main())' "${conf[@]}"
	spawn nova-api "$PY" -c 'import sys; from nova.cmd.api import main; sys.argv[0] = "nova-api"; sys.exit(main())' "${conf[@]}"
}

start_compute() { # a no-op for one that runs
	local h="$1"
	ours "$S/pid/$h" >/dev/null && return 0
	local in=()
	if [ "$VIRT" = libvirt ]; then
		ours "$S/pid/$h-machine" >/dev/null || return 0 # a machine without power runs nothing
		read -ra in <<<"$(libvirt_compute "$h")"
	fi
	spawn "$h" "${in[@]}" "$PY" -c 'import sys; from nova.cmd.compute import main; sys.argv[0] = "nova-compute"; sys.exit(main())' \
		--config-file "$S/etc/nova.conf" --config-file "$S/etc/$h.conf"
}

wait_computes() {
	wait_for nova-api 120 curl -sf http://$ADDR:8774/
	wait_for neutron 120 curl -sf http://$ADDR:9696/
	wait_for glance 120 curl -sf http://$ADDR:9292/
	local end=$((SECONDS + 180))
	while :; do
		manage nova.cmd.manage nova-manage --config-file "$S/etc/nova.conf" cell_v2 discover_hosts >/dev/null 2>&1 || true
		if py "$root/hack/nova/catalog.py" --ready "$S/env" "${HOSTS[@]}" 2>"$S/log/ready.err"; then
			return 0
		fi
		[ $SECONDS -lt $end ] || die "the computes did not register within 180s: $(cat "$S/log/ready.err")"
		sleep 2
	done
}

cmd="${1:-}"
shift || true
case "$cmd" in
install) install ;;
ready) ready ;;
up) state "${1:-}"; up ;;
down) state "${1:-}"; down ;;
stop-compute) state "${2:-}"; stop "$1" ;;
start-compute) state "${2:-}"; start_compute "$1" ;;
kill-host) state "${2:-}"; kill_host "$1" ;;
start-host) state "${2:-}"; start_host "$1" ;;
kill-libvirtd) state "${2:-}"; kill_libvirtd "$1" ;;
start-libvirtd) state "${2:-}"; start_libvirtd "$1" ;;
*) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
