# drainctl: `make test` is the test command (CI runs it through .ci/run).
GO        ?= go
ENVTEST   := $(CURDIR)/.envtest/bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

# Static binaries: kubectl's drain package pulls in kustomize, whose use of Go plugins
# doubles the binary when cgo is on (shared/notes/libs.md).
export CGO_ENABLED := 0

.PHONY: build test envtest vet tidy image unit bench bench-scale bench-recovery clean nova-up nova-down screenshot

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o drainctl .

# A real kube-apiserver and etcd, built from the Go module proxy (cold ~6 min, then cached).
envtest:
	@hack/envtest-assets.sh $(ENVTEST) >/dev/null

vet:
	$(GO) vet ./...

# Every test, on a real kube-apiserver + etcd and a real OpenStack Nova (hack/nova.sh, started
# while the tests compile; its tests skip without Debian's OpenStack packages, except in CI).
test: envtest tidy
	GO=$(GO) hack/test.sh

# The real Nova alone, for a session of its own: eval "$$(hack/nova.sh up)"; export DRAINCTL_REAL_NOVA
nova-up:
	@hack/nova.sh up
nova-down:
	@hack/nova.sh down

# go.mod and go.sum as go mod tidy leaves them (direct requirements not marked indirect).
tidy:
	@$(GO) mod tidy -diff || { echo "go.mod is not tidy: run go mod tidy"; exit 1; }
	@cd hack/image && $(GO) mod tidy -diff || { echo "hack/image/go.mod is not tidy"; exit 1; }

# The container image, without a Docker engine: an OCI archive of the static binary on an
# empty base, named as deploy/IMAGE (podman load -i, or skopeo copy oci-archive:...).
image:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/drainctl .
	cd hack/image && $(GO) run . -binary ../../dist/drainctl -out ../../dist/drainctl-image.oci.tar

# Benchmarks: prints markdown tables (figures only; nothing is asserted). Needs kubectl of
# the API server's version for the kubectl drain comparison (built here, ~40 s once).
bench:
	@WITH_KUBECTL=1 hack/envtest-assets.sh $(ENVTEST) >/dev/null
	$(GO) test -run XXX -bench . -benchmem ./ui ./ops/policy ./internal/app
	DRAINCTL_BENCH=1 KUBEBUILDER_ASSETS=$(ENVTEST) $(GO) test -count=1 -timeout 30m -v -run . ./hack/bench | grep '^|'

# drainctl against k9s on a real kube-apiserver with 5,000 nodes and 150,000 pods, both in
# tmux at 160x45: prints one table (nothing asserted). Builds k9s (pinned, ~10 min once) and
# the world (~10 min once; kept in .bench/, so a second run measures at once). Needs tmux.
bench-scale:
	@WITH_KUBECTL=1 hack/envtest-assets.sh $(ENVTEST) >/dev/null
	@hack/k9s.sh .bench/bin >/dev/null
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/drainctl .
	KUBEBUILDER_ASSETS=$(ENVTEST) $(GO) run ./hack/benchscale -drainctl dist/drainctl -k9s .bench/bin/k9s $(BENCH_SCALE_FLAGS)
	KUBEBUILDER_ASSETS=$(ENVTEST) $(GO) run ./hack/benchscale -roll -drainctl dist/drainctl $(BENCH_ROLL_FLAGS)

# Automatic recovery on a real Nova with Nova's own defaults (service_down_time 60 s,
# report_interval 10 s), kubelets renewing every 10 s: a host of 4 VMs dies; prints the time
# from its death to all four ACTIVE elsewhere against the floor (heartbeat_timeout 15 s + a 2 s
# fence + Nova's own rebuilds, measured in the same run). Stands its own Nova up (~3 min).
bench-recovery: envtest
	@hack/nova.sh down >/dev/null 2>&1 || true
	NOVA_SERVICE_DOWN_TIME=60 NOVA_REPORT_INTERVAL=10 hack/nova.sh up >/dev/null
	DRAINCTL_BENCH=recovery NOVA_SERVICE_DOWN_TIME=60 DRAINCTL_REAL_NOVA=$(CURDIR)/.nova/env KUBEBUILDER_ASSETS=$(ENVTEST) \
		$(GO) test -count=1 -timeout 20m -v -run '^TestRecoveryBench$$' . | grep '^recovery bench' ; s=$$?; hack/nova.sh down >/dev/null; exit $$s

# Unit tests only: the envtest-backed tests skip.
unit:
	$(GO) test ./...

clean:
	rm -rf drainctl dist

# The README's picture of the TUI, taken again from the real binary on the demo (tmux, 160x45).
screenshot:
	hack/screenshot.sh
