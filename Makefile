# shadow: `make demo` shows the whole flow on a demo project; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/shadow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit is stamped here too: `go build` leaves it out when -buildvcs=false is set (GOFLAGS).
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED ?= $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.modified=$(MODIFIED)
PKGS := ./...
FUZZTIME ?= 30s
GOARCH ?= $(shell $(GO) env GOARCH)
RELEASE_DIR ?= dist
RELEASE_BIN := $(RELEASE_DIR)/shadow-linux-$(GOARCH)

.PHONY: all build release release-check test test-deps lint unit bench fuzz demo deps clean \
	docs install uninstall

# Where make install puts shadow: PREFIX=$$HOME/.local needs no root; DESTDIR stages the tree
# under another root (a package build).
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
# Generated from the command tree by `make docs`: the man pages and the shell completions.
DOCS_DIR := $(dir $(BIN))docs
# What bin/shadow is built from: make rebuilds it (for install and demo) only when one changed.
SOURCES := $(shell find . -path ./bin -prune -o -path ./dist -prune -o -path ./.git -prune -o \
	-type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -path './assets/*' \) -print 2>/dev/null) go.mod go.sum

all: build

# deps installs the Debian packages shadow needs to build (cgo + libseccomp) when run as root;
# test-deps those the tests need. .ci/deps holds the one list of both.
deps:
	@bash .ci/deps build

test-deps:
	@bash .ci/deps test

build: deps
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/shadow

# bin/shadow as a file: built when missing or older than a source, reused as it is otherwise
# (so `sudo make install` after `make build` installs that binary and builds nothing as root).
$(BIN): $(SOURCES)
	@$(MAKE) --no-print-directory build

# docs writes the man pages (shadow.1, shadow-run.1, ...) and the bash, zsh and fish completions.
docs: $(BIN)
	rm -rf $(DOCS_DIR)
	$(BIN) man-pages $(DOCS_DIR)/man1
	$(BIN) completion bash > $(DOCS_DIR)/shadow.bash
	$(BIN) completion zsh > $(DOCS_DIR)/_shadow
	$(BIN) completion fish > $(DOCS_DIR)/shadow.fish

# install puts the binary in BINDIR, the man pages in MANDIR/man1 and the completions where
# bash-completion, zsh and fish look under PREFIX (for PREFIX=$$HOME/.local, the user's own).
install: docs
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/shadow
	install -m 0644 $(DOCS_DIR)/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(DOCS_DIR)/shadow.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/shadow
	install -m 0644 $(DOCS_DIR)/_shadow $(DESTDIR)$(DATADIR)/zsh/site-functions/_shadow
	install -m 0644 $(DOCS_DIR)/shadow.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/shadow.fish
	@echo "installed $(DESTDIR)$(BINDIR)/shadow; run: shadow doctor"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/shadow $(DESTDIR)$(MANDIR)/man1/shadow.1 $(DESTDIR)$(MANDIR)/man1/shadow-*.1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/shadow $(DESTDIR)$(DATADIR)/zsh/site-functions/_shadow \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/shadow.fish

# release builds a static binary (libseccomp linked in; netgo and osusergo keep glibc's resolver
# and user lookup, which a static binary cannot load, out of it) and its sha256 checksum file.
release: deps
	CGO_ENABLED=1 $(GO) build -trimpath -tags netgo,osusergo \
		-ldflags "$(LDFLAGS) -s -w -linkmode external -extldflags -static" -o $(RELEASE_BIN) ./cmd/shadow
	cd $(RELEASE_DIR) && sha256sum $(notdir $(RELEASE_BIN)) > $(notdir $(RELEASE_BIN)).sha256
	@echo "$(RELEASE_BIN) and $(RELEASE_BIN).sha256"

# release-check checks the release binary: static (no ELF interpreter), its checksum, and that
# it runs `version` and `run -- true` (cmd/shadow's TestReleaseBinary).
release-check: release
	SHADOW_RELEASE_BIN=$(abspath $(RELEASE_BIN)) $(GO) test -count=1 -run '^TestReleaseBinary$$' ./cmd/shadow

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# test runs every test, then says which were skipped for want of a tool or of root (none, as root).
test: deps test-deps lint
	@status=0; $(MAKE) --no-print-directory unit || status=$$?; bash .ci/deps report; exit $$status

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
	rm -rf bin $(RELEASE_DIR)
