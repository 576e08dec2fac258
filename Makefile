# shadow: `make demo` shows the whole flow on a demo project; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/shadow
# The jail's PID 1 (cmd/shadow-init): a small program beside shadow, which starts it for every jail.
INIT_BIN = $(dir $(BIN))shadow-init
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
RELEASE_INIT_BIN := $(RELEASE_DIR)/shadow-init-linux-$(GOARCH)

.PHONY: all build release release-check test test-deps lint unit bench fuzz demo deps clean \
	docs install uninstall deb deb-check container-check

# Where make install puts shadow: PREFIX=$$HOME/.local needs no root; DESTDIR stages the tree
# under another root (a package build).
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
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

# A first build compiles every package (cgo for libseccomp, ~280 packages with the standard
# library's) into Go's build cache; later builds compile what changed and relink.
build: deps
	@echo "building $(BIN) (a first build takes 1–7 minutes: cgo and ~280 packages; later ones seconds)…"
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/shadow
	$(call INIT_BUILD,) -o $(INIT_BIN) ./cmd/shadow-init

# shadow-init is built with the shadowinit tag, which leaves the host's side of the sandbox
# package (and libseccomp, the proxy, TLS) out of it: it links the jail's side and no more (netgo
# and osusergo: nor glibc's resolver and user lookup, which PID 1 never uses). It is static: each
# jail starts it twice (PID 1, the exec stage), and the dynamic loader was a sixth of its start.
INIT_TAGS := shadowinit,netgo,osusergo
# $(call INIT_BUILD,EXTRA_LDFLAGS)
INIT_BUILD = CGO_ENABLED=1 $(GO) build -trimpath -tags $(INIT_TAGS) \
	-ldflags "$(LDFLAGS) $(1) -linkmode external -extldflags -static"
# bin/shadow as a file: built when missing or older than a source, reused as it is otherwise
# (so `sudo make install` after `make build` installs that binary and builds nothing as root).
$(BIN): $(SOURCES)
	@$(MAKE) --no-print-directory build

$(INIT_BIN): $(SOURCES)
	$(call INIT_BUILD,) -o $@ ./cmd/shadow-init

# docs writes the man pages (shadow.1, shadow-run.1, ...) and the bash, zsh and fish completions.
docs: $(BIN)
	rm -rf $(DOCS_DIR)
	$(BIN) man-pages $(DOCS_DIR)/man1
	$(BIN) completion bash > $(DOCS_DIR)/shadow.bash
	$(BIN) completion zsh > $(DOCS_DIR)/_shadow
	$(BIN) completion fish > $(DOCS_DIR)/shadow.fish

# install puts the binary in BINDIR, shadow-init in LIBEXECDIR/shadow, the man pages in MANDIR/man1 and the completions where
# bash-completion, zsh and fish look under PREFIX (for PREFIX=$$HOME/.local, the user's own).
install: docs $(INIT_BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/shadow $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/shadow
	install -m 0755 $(INIT_BIN) $(DESTDIR)$(LIBEXECDIR)/shadow/shadow-init
	install -m 0644 $(DOCS_DIR)/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(DOCS_DIR)/shadow.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/shadow
	install -m 0644 $(DOCS_DIR)/_shadow $(DESTDIR)$(DATADIR)/zsh/site-functions/_shadow
	install -m 0644 $(DOCS_DIR)/shadow.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/shadow.fish
	@echo "installed $(DESTDIR)$(BINDIR)/shadow; run: shadow doctor"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/shadow $(DESTDIR)$(LIBEXECDIR)/shadow/shadow-init $(DESTDIR)$(MANDIR)/man1/shadow.1 $(DESTDIR)$(MANDIR)/man1/shadow-*.1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/shadow $(DESTDIR)$(DATADIR)/zsh/site-functions/_shadow \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/shadow.fish
	rmdir $(DESTDIR)$(LIBEXECDIR)/shadow 2>/dev/null || true

# release builds static binaries (libseccomp linked in; netgo and osusergo keep glibc's resolver
# and user lookup, which a static binary cannot load, out of it), shadow and shadow-init, and a
# sha256 checksum file for each. shadow runs alone too: without shadow-init beside it, it is its
# own PID 1.
release: deps
	CGO_ENABLED=1 $(GO) build -trimpath -tags netgo,osusergo \
		-ldflags "$(LDFLAGS) -s -w -linkmode external -extldflags -static" -o $(RELEASE_BIN) ./cmd/shadow
	$(call INIT_BUILD,-s -w) -o $(RELEASE_INIT_BIN) ./cmd/shadow-init
	cd $(RELEASE_DIR) && sha256sum $(notdir $(RELEASE_BIN)) > $(notdir $(RELEASE_BIN)).sha256 && \
		sha256sum $(notdir $(RELEASE_INIT_BIN)) > $(notdir $(RELEASE_INIT_BIN)).sha256
	@echo "$(RELEASE_BIN), $(RELEASE_INIT_BIN) and their .sha256"

# deb builds dist/shadow_VERSION_ARCH.deb with dpkg-deb from the static release binaries and the
# control files of packaging/deb (man pages and completions are generated by the binary).
deb: release
	bash packaging/deb/build.sh $(RELEASE_BIN) $(RELEASE_DIR) $(RELEASE_INIT_BIN)

# deb-check installs that package with apt-get, tries it as an ordinary user and purges it
# (cmd/shadow's TestDebPackage; as root: it installs /usr/bin/shadow while it runs).
deb-check: deb
	@bash .ci/deps package
	lintian --fail-on error $$(ls -t $(abspath $(RELEASE_DIR))/shadow_*_$$(dpkg --print-architecture).deb | head -1)
	SHADOW_DEB=$$(ls -t $(abspath $(RELEASE_DIR))/shadow_*_$$(dpkg --print-architecture).deb | head -1) \
		$(GO) test -count=1 -v -run '^TestDebPackage$$' ./cmd/shadow

# container-check runs the static binary in a podman container started as the README says, on
# a Debian image made here with debootstrap (cached under /var/tmp): doctor with podman's default
# options and with the documented ones, a jailed command and shadow diff as root and as a user.
container-check: release
	bash packaging/container/check.sh $(RELEASE_BIN)

# release-check checks the release binaries: static (no ELF interpreter), their checksums, and
# that shadow runs `version` and a jailed command, alone and with shadow-init beside it
# (cmd/shadow's TestReleaseBinary).
release-check: release
	SHADOW_RELEASE_BIN=$(abspath $(RELEASE_BIN)) SHADOW_RELEASE_INIT_BIN=$(abspath $(RELEASE_INIT_BIN)) $(GO) test -count=1 -run '^TestReleaseBinary$$' ./cmd/shadow

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags $(INIT_TAGS) ./cmd/shadow-init

# unit runs every package's tests, with the race detector, but for the two packages whose tests
# drive the built binary (the CLI, and the jail's PID 1 re-executed): there it makes each shadow
# and each jail about 3x slower, and what their tests exercise is race-tested in its own package.
# The two sets run side by side.
BINARY_PKGS := ./cmd/shadow ./sandbox
unit:
	@race=$$($(GO) list $(PKGS) | grep -v -x -e '$(shell $(GO) list ./cmd/shadow)' -e '$(shell $(GO) list ./sandbox)'); \
	$(GO) test -race -count=1 -timeout 60m $$race & r=$$!; \
	$(GO) test -count=1 -timeout 60m $(BINARY_PKGS); b=$$?; \
	wait $$r; a=$$?; [ $$a -eq 0 ] && [ $$b -eq 0 ]

# test runs every test, then says which were skipped for want of a tool or of root (none, as root).
test: deps test-deps lint
	@status=0; $(MAKE) --no-print-directory unit || status=$$?; bash .ci/deps report; exit $$status

# bench prints the figures of SPEC §9 as ratios against the named peer in the same run
# (needs hyperfine and bubblewrap; bench/audit.sh installs a real node_modules with npm once).
bench: build
	bash bench/all.sh $(BIN) $(PKGS)

# fuzz runs every fuzz target for FUZZTIME each (make test only runs their seed corpora).
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# demo reuses bin/shadow (and bin/shadow-init) when no source is newer, and builds it first otherwise.
demo: $(BIN) $(INIT_BIN)
	@bash assets/demo/run-demo.sh $(BIN)

clean:
	rm -rf bin $(RELEASE_DIR)
