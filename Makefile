# adopt: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
TEST_TIMEOUT ?= 85m
# adopt ships static (internal/release builds with CGO_ENABLED=0), so it is
# built and tested that way: the same net and os/user code as the release,
# and each test binary is linked by Go's own linker (no gcc), about half
# the link time of the ~37 test binaries a run builds. CGO_ENABLED=1 make
# test overrides it.
export CGO_ENABLED ?= 0
# cmd/adopt is listed first so that go test starts it, the longest package
# (about 480 s of the run), first; three packages at once keep both cores
# busy while a package waits on a sync or a Gitea push.
TEST_FLAGS ?= -p 3

.PHONY: all build demo test testbin unit vet fuzz bench clean release release-check

all: build

## build: the adopt binary in bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/adopt ./cmd/adopt

## demo: start a local control plane, seed the incident's estate, run adopt on it with a real Argo CD (ARGOCD=0: without)
demo: build
	@bash internal/testenv/tools/install-debs.sh
	@PR=$(PR) ARGOCD=$(ARGOCD) $(GO) run ./internal/demo -adopt bin/adopt

## testbin: build and cache the real parts the tests run against (printed with timings)
testbin:
	@bash internal/testenv/tools/testbin.sh

## test: vet, then every test against the real parts; with CI=true, then every fuzzer for FUZZTIME
test: testbin vet
	@start=$$(date +%s); \
	CI=$${CI:-} $(GO) test $(TEST_FLAGS) -count=1 -timeout $(TEST_TIMEOUT) ./cmd/adopt ./... ; rc=$$?; \
	echo "phase: go test $$(( $$(date +%s) - start ))s"; exit $$rc
	@if [ "$${CI:-}" = true ]; then $(MAKE) --no-print-directory fuzz; fi

# A count, not a duration: Go 1.26's fuzz coordinator can fail a run with a
# bare "context deadline exceeded" when a -fuzztime duration ends while a
# worker is busy (go.dev/issue/75804, fixed in Go 1.27). A count has no
# deadline to race; minimizing a new input is capped so one cannot run long.
FUZZTIME ?= 5000x
FUZZMINIMIZETIME ?= 10s

## fuzz: run every Fuzz* function for FUZZTIME inputs each (plain go test replays their testdata/fuzz corpora)
fuzz:
	@set -e; start=$$(date +%s); \
	for f in $$(grep -rlE --include='*_test.go' --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]*\(' . | sort); do \
	  for name in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' $$f); do \
	    echo "fuzz: $$name in ./$$(dirname $${f#./}) for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$(dirname $${f#./}); \
	  done; \
	done; \
	echo "phase: fuzz $$(( $$(date +%s) - start ))s"

## bench: plan 20k and 100k objects, finalize 1,000, apply 500 Applications on a local control plane and git server, each against its baseline; prints the table and writes bench/results.json (BENCH_FLAGS=-smoke: small sizes)
bench: build
	@bash internal/testenv/tools/install-debs.sh
	$(GO) run ./bench -adopt bin/adopt $(BENCH_FLAGS)

## release: offline, reproducible release artifacts in dist/: linux, darwin, windows x amd64, arm64 (stripped, -trimpath, stamped from git), archives, checksums.txt, plugins/adopt.yaml (krew)
release:
	@start=$$(date +%s); $(GO) run ./internal/release -out dist; echo "phase: release $$(( $$(date +%s) - start ))s"

## release-check: build linux/amd64 twice, each with an empty build cache, and compare the archives (slow: two cold builds)
release-check:
	@set -e; for i in 1 2; do \
	  cache=$$(mktemp -d); GOCACHE=$$cache $(GO) run ./internal/release -out dist/check$$i -targets linux/amd64; rm -rf $$cache; \
	done; cmp dist/check1/checksums.txt dist/check2/checksums.txt && echo "release-check: identical"

vet:
	$(GO) vet ./...

clean:
	rm -rf bin dist
