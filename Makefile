# adopt: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
TEST_TIMEOUT ?= 85m

.PHONY: all build demo test testbin unit vet fuzz bench clean

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
	CI=$${CI:-} $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./... ; rc=$$?; \
	echo "phase: go test $$(( $$(date +%s) - start ))s"; exit $$rc
	@if [ "$${CI:-}" = true ]; then $(MAKE) --no-print-directory fuzz; fi

FUZZTIME ?= 20s

## fuzz: run every Fuzz* function for FUZZTIME each (plain go test replays their testdata/fuzz corpora)
fuzz:
	@set -e; start=$$(date +%s); \
	for f in $$(grep -rlE --include='*_test.go' --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]*\(' . | sort); do \
	  for name in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' $$f); do \
	    echo "fuzz: $$name in ./$$(dirname $${f#./}) for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) ./$$(dirname $${f#./}); \
	  done; \
	done; \
	echo "phase: fuzz $$(( $$(date +%s) - start ))s"

## bench: plan 20k and 100k objects, finalize 1,000, apply 500 Applications on a local control plane and git server, each against its baseline; prints the table and writes bench/results.json (BENCH_FLAGS=-smoke: small sizes)
bench: build
	@bash internal/testenv/tools/install-debs.sh
	$(GO) run ./bench -adopt bin/adopt $(BENCH_FLAGS)

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
