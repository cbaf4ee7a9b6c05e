#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the Go module proxy for envtest, caches them in
# the directory given as $1 (default .envtest/bin) and prints that directory, so that
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
# works. A second run with the binaries present returns at once.
#
# Why build instead of download: the machines this project is tested on reach only the Go
# module proxy and Debian's archive, and setup-envtest downloads prebuilt tarballs.
# Facts and timings: shared/notes/envtest.md (cold build ~7 min on 2 cores).
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
WITH_KUBECTL="${WITH_KUBECTL:-0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/.envtest/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"

have() { [ -x "$bin/$1" ] && [ -s "$bin/$1" ]; }
stamp="$bin/.version"
if have kube-apiserver && have etcd && [ "$(cat "$stamp" 2>/dev/null)" = "$KUBE_VERSION" ] \
	&& { [ "$WITH_KUBECTL" = 0 ] || have kubectl; }; then
	echo "$bin"
	exit 0
fi

mod="$root/.envtest/tools-mod"
mkdir -p "$mod"
staging="v0${KUBE_VERSION#v1}" # v1.36.3 -> v0.36.3
log() { echo "envtest-assets: $*" >&2; }

# Every staging module must be replaced (even ones kube-apiserver never imports), or module
# resolution fails on their v0.0.0 requires. Derive the list from kubernetes' own go.mod.
log "resolving k8s.io/kubernetes@$KUBE_VERSION"
kmod="$(cd "$mod" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
replaces="$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$kmod")"

cat >"$mod/go.mod" <<GOMOD
module envtest-tools

go 1.26.0

godebug default=go1.26

require k8s.io/kubernetes $KUBE_VERSION

tool (
	go.etcd.io/etcd/server/v3
	k8s.io/kubernetes/cmd/kube-apiserver
	k8s.io/kubernetes/cmd/kubectl
)

replace (
$replaces
)
GOMOD

log "go mod tidy"
(cd "$mod" && go mod tidy >&2)

pkgv=k8s.io/component-base/version
cgv=k8s.io/client-go/pkg/version
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ld="-s -w"
for p in $pkgv $cgv; do
	ld="$ld -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

build() { # pkg out
	log "building $2 (cold: several minutes)"
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$bin/$2.tmp" "$1" >&2)
	mv "$bin/$2.tmp" "$bin/$2"
}
build k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
# An explicit output name: go build would call etcd's main package "server".
build go.etcd.io/etcd/server/v3 etcd
if [ "$WITH_KUBECTL" != 0 ]; then build k8s.io/kubernetes/cmd/kubectl kubectl; fi
echo "$KUBE_VERSION" >"$stamp"
echo "$bin"
