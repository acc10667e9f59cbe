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

## demo: start a local control plane, seed the incident's estate, run adopt on it
demo: build
	@PR=$(PR) $(GO) run ./internal/demo -adopt bin/adopt

## testbin: build and cache the real parts the tests run against (printed with timings)
testbin:
	@bash internal/testenv/tools/testbin.sh

## test: vet, then every test against the real parts
test: testbin vet
	@start=$$(date +%s); \
	CI=$${CI:-} $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./... ; rc=$$?; \
	echo "phase: go test $$(( $$(date +%s) - start ))s"; exit $$rc

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
