# shadow: `make demo` shows the whole flow on a demo project; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/shadow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
PKGS := ./...
FUZZTIME ?= 30s

.PHONY: all build test lint unit bench fuzz demo deps clean

all: build

# deps installs the Debian packages shadow needs to build (cgo + libseccomp) when run as root.
deps:
	@if ! pkg-config --exists libseccomp 2>/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y libseccomp-dev pkg-config; \
		else echo "install libseccomp-dev and pkg-config (sudo apt-get install libseccomp-dev pkg-config)" >&2; exit 1; fi; \
	fi

build: deps
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/shadow

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

test: deps lint unit

# bench prints the figures of SPEC §9 as ratios against the named peer in the same run
# (needs hyperfine and bubblewrap; bench/audit.sh installs a real node_modules with npm once).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x $(PKGS)
	SHADOW=$(BIN) bash bench/jail.sh 5
	bash bench/review.sh $(BIN) 10000
	bash bench/audit.sh $(BIN)

# fuzz runs every fuzz target for FUZZTIME each (make test only runs their seed corpora).
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

demo: build
	@bash assets/demo/run-demo.sh $(BIN)

clean:
	rm -rf bin
