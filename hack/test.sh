#!/usr/bin/env bash
# `make test`: every test, against a real kube-apiserver and etcd (envtest), a real OpenStack
# Nova (hack/nova.sh, the fake virt driver: fast, for every Nova behaviour drainctl decides
# on) and the libvirt world (NOVA_VIRT=libvirt hack/nova.sh: the same Nova over real QEMU
# guests, for every move, stall, failure and recovery of a guest).
#
# 1. The fake-driver Nova starts in the background while the tests compile; then every test
#    but the real guests' runs, while the libvirt world starts in the background.
# 2. The fake-driver Nova stops (its CPU is the guests' now) and the real guests' tests run
#    (TestGuest*, in the main package), one at a time: each holds the world.
#
# Both worlds need Debian's OpenStack, libvirt and QEMU packages (hack/nova.sh install; CI
# installs them). Without them the tests that need them skip, except under CI=true, where
# they fail.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
envtest="$root/.envtest/bin"
state="$root/.nova"
guests="$root/.nova-libvirt"
now() { date +%s; }

nova_pid="" libvirt_pid=""
if "$root/hack/nova.sh" ready 2>/dev/null; then
	echo "test: starting the real Nova in the background (log: .nova.log)"
	"$root/hack/nova.sh" up "$state" >"$root/.nova.log" 2>&1 &
	nova_pid=$!
else
	echo "test: Debian's OpenStack packages are not installed (hack/nova.sh install): the real Nova's tests skip" >&2
fi
stop_worlds() {
	[ -z "$libvirt_pid" ] || { wait "$libvirt_pid" 2>/dev/null || true; NOVA_VIRT=libvirt "$root/hack/nova.sh" down "$guests" || true; }
	[ -z "$nova_pid" ] || { wait "$nova_pid" 2>/dev/null || true; "$root/hack/nova.sh" down "$state" || true; }
}
trap stop_worlds EXIT

"$GO" vet ./...
"$GO" test -count=1 -run '^$' ./... >/dev/null # compiles every test binary meanwhile

export KUBEBUILDER_ASSETS="$envtest"
# started PID NAME LOG STATE: waits for a world started in the background; one that did not
# start ends the run (exit 1), its log's tail shown.
started() {
	wait "$1" && return 0
	tail -30 "$root/$3" >&2
	echo "test: $2 did not start (whole log: $3, services' logs: $4/log/)" >&2
	exit 1
}

if [ -n "$nova_pid" ]; then
	started "$nova_pid" "the real Nova" .nova.log .nova
	nova_pid=done
	export DRAINCTL_REAL_NOVA="$state/env"
	rm -f "$state/tests.ran"
	echo "test: starting the libvirt world in the background (log: .nova-libvirt.log)"
	NOVA_VIRT=libvirt "$root/hack/nova.sh" up "$guests" >"$root/.nova-libvirt.log" 2>&1 &
	libvirt_pid=$!
fi

rc=0
t0=$(now)
"$GO" test -count=1 -timeout 25m -skip '^TestGuest' ./... || rc=$?
echo "test: every test but the real guests' took $(($(now) - t0))s"
if [ -n "${DRAINCTL_REAL_NOVA:-}" ]; then
	echo "test: $(sort -u "$state/tests.ran" 2>/dev/null | wc -l) tests ran against the real Nova"
	"$root/hack/nova.sh" down "$state" || true
	nova_pid=""
	unset DRAINCTL_REAL_NOVA
fi

if [ -n "$libvirt_pid" ]; then
	started "$libvirt_pid" "the libvirt world" .nova-libvirt.log .nova-libvirt
	libvirt_pid=done
	export DRAINCTL_REAL_HYPERVISOR="$guests/env"
	rm -f "$guests/tests.ran"
	t0=$(now)
	"$GO" test -count=1 -timeout 20m -run '^TestGuest' . || rc=$?
	echo "test: the real guests' tests took $(($(now) - t0))s"
	echo "test: $(sort -u "$guests/tests.ran" 2>/dev/null | wc -l) tests ran against real guests (libvirt + QEMU under the real Nova)"
elif [ "${CI:-}" = true ]; then
	"$GO" test -count=1 -run '^TestGuest' . || rc=$? # fails: CI stands the world up
fi
exit $rc
