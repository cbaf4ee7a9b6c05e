#!/usr/bin/env bash
# `make test`: every test, against a real kube-apiserver and etcd (envtest) and a real
# OpenStack Nova (hack/nova.sh), which starts in the background while the tests compile.
#
# The real Nova needs Debian's OpenStack packages (hack/nova.sh install; CI installs them).
# Without them the tests that need it skip, except under CI=true, where they fail.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
envtest="$root/.envtest/bin"
state="$root/.nova"

nova_pid=""
if "$root/hack/nova.sh" ready 2>/dev/null; then
	echo "test: starting the real Nova in the background (log: .nova.log)"
	"$root/hack/nova.sh" up "$state" >"$root/.nova.log" 2>&1 &
	nova_pid=$!
else
	echo "test: Debian's OpenStack packages are not installed (hack/nova.sh install): the real Nova's tests skip" >&2
fi
stop_nova() {
	if [ -n "$nova_pid" ]; then
		wait "$nova_pid" 2>/dev/null || true
		"$root/hack/nova.sh" down "$state" || true
	fi
}
trap stop_nova EXIT

"$GO" vet ./...
"$GO" test -count=1 -run '^$' ./... >/dev/null # compiles every test binary meanwhile

export KUBEBUILDER_ASSETS="$envtest"
if [ -n "$nova_pid" ]; then
	if ! wait "$nova_pid"; then
		nova_pid=""
		tail -30 "$root/.nova.log" >&2
		echo "test: the real Nova did not start (whole log: .nova.log, services' logs: .nova/log/)" >&2
		exit 1
	fi
	nova_pid=done
	export DRAINCTL_REAL_NOVA="$state/env"
	rm -f "$state/tests.ran"
fi

rc=0
"$GO" test -count=1 -timeout 25m ./... || rc=$?
if [ -n "${DRAINCTL_REAL_NOVA:-}" ]; then
	echo "test: $(sort -u "$state/tests.ran" 2>/dev/null | wc -l) tests ran against the real Nova"
fi
exit $rc
