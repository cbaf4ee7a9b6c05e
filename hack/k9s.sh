#!/usr/bin/env bash
# Builds k9s, the anchor of `make bench-scale`, from the Go module proxy into $1 (default
# .bench/bin): a throw-away module that requires it, since `go install pkg@version` refuses
# a module with replace directives. Pinned; ~10 min on 2 cores, once.
set -euo pipefail
K9S_VERSION=${K9S_VERSION:-v0.51.0}
out=$(realpath -m "${1:-.bench/bin}")
if [[ -x $out/k9s && "$(cat "$out/k9s.version" 2>/dev/null)" == "$K9S_VERSION" ]]; then
  echo "$K9S_VERSION" >"$out/k9s.version"
echo "$out/k9s"
  exit 0
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cat >go.mod <<MOD
module k9sbuild

go 1.26
MOD
printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/derailed/k9s"\n' >tools.go
GOFLAGS=-mod=mod go get "github.com/derailed/k9s@$K9S_VERSION" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/derailed/k9s/cmd.version=$K9S_VERSION" -o "$out/k9s" github.com/derailed/k9s
echo "$K9S_VERSION" >"$out/k9s.version"
echo "$out/k9s"
