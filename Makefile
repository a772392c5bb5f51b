# rdmacm-rs — build, test, install.
#
#   make            build build/librdmacm.so.1, build/librspreload.so (+ pkg-config file)
#   make test       every test: host checks, then the soft-RoCE VM suite
#   make demo       boot the soft-RoCE VM and show upstream programs on our library
#   make bench      instruction counts against Debian's librdmacm (not a test)
#   make check-asan the library built with AddressSanitizer through the VM suite's
#                   differential programs, thread test and program matrix (not in make test)
#   make install    PREFIX=/usr/local LIBDIR=$(PREFIX)/lib INCLUDEDIR=$(PREFIX)/include DESTDIR=
#                   (INSTALL_STATIC=1 also installs the static library librdmacm.a)
#   make deb        Debian packages librdmacm1 and librdmacm-dev in build/deb/ (debian/rules binary)
#   make headers    regenerate include/ with cbindgen
#   make man        manual pages into build/man (man/*.rst through rst2man; installed by
#                   make install into MANDIR=$(PREFIX)/share/man)

SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
CC ?= cc

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
# ABI level = minor of the newest version node that exports a function.
LEVEL := $(shell awk '/^RDMACM_1\.[0-9]+ *\{/ { n = $$1; sub(/RDMACM_1\./, "", n) } \
	/^[ \t]+rdma_[a-z_]+;|^[ \t]+r[a-z_]+;/ { if (n > lvl) lvl = n } END { print lvl + 0 }' librdmacm.map)
SOFILE := librdmacm.so.1.$(LEVEL).$(VERSION)
B := build
LIB := $(B)/$(SOFILE)
# A target directory of its own: a plain `cargo build --release` (which
# builds the rlib too, see below) must not leave a newer librdmacm.a where
# make would take it as up to date and link it.
STATIC_DIR := target/lib-only
STATIC := $(STATIC_DIR)/release/librdmacm.a
PRELOAD := $(B)/librspreload.so
PRELOAD_STATIC := target/release/librspreload.a
PRELOAD_SRC := $(shell find preload/src -name '*.rs') preload/Cargo.toml
RUST_SRC := $(shell find src -name '*.rs') src/verbs_shim.c src/variadic_shim.c Cargo.toml build.rs abi-tests/layout/layout.c

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=
INSTALL_STATIC ?= 0

.DEFAULT_GOAL := all
.PHONY: deb all lib headers check-headers test host-test vm-test demo bench check-asan install uninstall clean setup-host man

all: lib $(PRELOAD) $(B)/librdmacm.pc

lib: $(B)/librdmacm.so.1

# The staticlib alone (not with the rlib that Cargo.toml also names for the
# unit tests): then LTO keeps external only the C exports, and the Rust
# functions and statics are reached directly instead of through the GOT
# (docs/speed.md, "Connection manager and address translation").
$(STATIC): $(RUST_SRC)
	RDMACM_REQUIRE_LAYOUT=$${RDMACM_REQUIRE_LAYOUT:-1} CARGO_TARGET_DIR=$(STATIC_DIR) $(CARGO) rustc --release --quiet --lib --crate-type staticlib

# Rust cannot put version nodes on a cdylib: link the staticlib ourselves.
$(LIB): $(STATIC) librdmacm.map
	@mkdir -p $(B)
	$(CC) -shared -o $@ -Wl,-soname,librdmacm.so.1 -Wl,--version-script=librdmacm.map \
		-Wl,--gc-sections -Wl,-z,relro -Wl,-z,now -Wl,--strip-debug -Wl,--no-undefined \
		-Wl,--whole-archive $(STATIC) -Wl,--no-whole-archive \
		-Wl,--no-as-needed -libverbs -Wl,--as-needed -lgcc_s -lpthread -ldl -lc

# librspreload.so (preload/): no SONAME, unversioned exports, NEEDED
# librdmacm.so.1, as upstream's preload library.

$(PRELOAD_STATIC): $(PRELOAD_SRC)
	$(CARGO) rustc --release --quiet -p rspreload --lib --crate-type staticlib

# The exports with variadic C prototypes (fcntl, fcntl64).
$(B)/preload-shim.o: preload/src/shim.c
	@mkdir -p $(B)
	$(CC) -c -O2 -fPIC -Wall -Wextra -Werror -o $@ $<

$(PRELOAD): $(PRELOAD_STATIC) $(B)/preload-shim.o preload/librspreload.map $(B)/librdmacm.so.1
	$(CC) -shared -o $@ -Wl,--version-script=preload/librspreload.map $(B)/preload-shim.o \
		-Wl,--gc-sections -Wl,-z,relro -Wl,-z,now -Wl,--strip-debug -Wl,--no-undefined \
		-Wl,--whole-archive $(PRELOAD_STATIC) -Wl,--no-whole-archive \
		-L$(B) -lrdmacm -lgcc_s -lpthread -ldl -lc

# Links, and no stale library file of another ABI level or version beside them.
$(B)/librdmacm.so.1: $(LIB)
	find $(B) -maxdepth 1 -name 'librdmacm.so.1.*' ! -name '$(SOFILE)' -delete
	ln -sf $(SOFILE) $(B)/librdmacm.so.1
	ln -sf librdmacm.so.1 $(B)/librdmacm.so

PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	-e 's|@VERSION@|1.$(LEVEL).$(VERSION)|' pkgconfig/librdmacm.pc.in

$(B)/librdmacm.pc: pkgconfig/librdmacm.pc.in Cargo.toml librdmacm.map
	@mkdir -p $(B)
	$(PC_SED) > $@

headers:
	cbindgen --quiet --config cbindgen.toml --crate rdmacm-rs --output include/rdma/rdma_cma.h
	cbindgen --quiet --config cbindgen-ib.toml --crate rdmacm-rs --output include/infiniband/ib.h
	cbindgen --quiet --config cbindgen-rsocket.toml --crate rdmacm-rs --output include/rdma/rsocket.h
	cbindgen --quiet --config cbindgen-abi.toml --crate rdmacm-rs --output include/rdma/rdma_cma_abi.h

check-headers:
	@mkdir -p $(B)/headers
	cbindgen --quiet --config cbindgen.toml --crate rdmacm-rs --output $(B)/headers/rdma_cma.h
	cbindgen --quiet --config cbindgen-ib.toml --crate rdmacm-rs --output $(B)/headers/ib.h
	cbindgen --quiet --config cbindgen-rsocket.toml --crate rdmacm-rs --output $(B)/headers/rsocket.h
	cbindgen --quiet --config cbindgen-abi.toml --crate rdmacm-rs --output $(B)/headers/rdma_cma_abi.h
	diff -u include/rdma/rdma_cma.h $(B)/headers/rdma_cma.h
	diff -u include/infiniband/ib.h $(B)/headers/ib.h
	diff -u include/rdma/rsocket.h $(B)/headers/rsocket.h
	diff -u include/rdma/rdma_cma_abi.h $(B)/headers/rdma_cma_abi.h

# Manual pages (rst2man: python3-docutils); not part of `all`.
man:
	bash man/build.sh $(B)/man

# Every page and alias page, as installed (for uninstall).
MAN_PAGES = $(patsubst man/%.rst,%,$(wildcard man/*.rst)) \
	$(shell sed -n 's/^\([A-Za-z0-9_]*\.[0-9][a-z]*\)[[:space:]].*/\1/p' man/aliases 2>/dev/null)

setup-host:
	bash abi-tests/setup-host.sh

# Host checks (no RDMA needed), then the real-kernel suite in the VM.
test: setup-host
	bash abi-tests/run-tests.sh

host-test: setup-host
	RDMACM_SKIP_VM=1 bash abi-tests/run-tests.sh

vm-test: all
	bash abi-tests/vm/vm-test.sh

demo: setup-host all
	bash abi-tests/vm/demo.sh

bench: setup-host all
	bash abi-tests/bench.sh

check-asan: setup-host all
	bash abi-tests/asan/check-asan.sh

install: all man
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/rdma $(DESTDIR)$(INCLUDEDIR)/infiniband $(DESTDIR)$(PKGCONFIGDIR)
	install -m 0755 $(LIB) $(DESTDIR)$(LIBDIR)/$(SOFILE)
	install -d $(DESTDIR)$(LIBDIR)/rsocket
	install -m 0644 $(PRELOAD) $(DESTDIR)$(LIBDIR)/rsocket/librspreload.so
	ln -sf librspreload.so $(DESTDIR)$(LIBDIR)/rsocket/librspreload.so.1
	ln -sf librspreload.so $(DESTDIR)$(LIBDIR)/rsocket/librspreload.so.1.0.0
	ln -sf $(SOFILE) $(DESTDIR)$(LIBDIR)/librdmacm.so.1
	ln -sf librdmacm.so.1 $(DESTDIR)$(LIBDIR)/librdmacm.so
	install -m 0644 include/rdma/rdma_cma.h $(DESTDIR)$(INCLUDEDIR)/rdma/rdma_cma.h
	install -m 0644 include/rdma/rdma_cma_abi.h $(DESTDIR)$(INCLUDEDIR)/rdma/rdma_cma_abi.h
	install -m 0644 include/rdma/rdma_verbs.h $(DESTDIR)$(INCLUDEDIR)/rdma/rdma_verbs.h
	install -m 0644 include/rdma/rsocket.h $(DESTDIR)$(INCLUDEDIR)/rdma/rsocket.h
	install -m 0644 include/infiniband/ib.h $(DESTDIR)$(INCLUDEDIR)/infiniband/ib.h
	$(PC_SED) > $(DESTDIR)$(PKGCONFIGDIR)/librdmacm.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/librdmacm.pc
	install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	install -m 0644 $(B)/man/man3/* $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 $(B)/man/man7/* $(DESTDIR)$(MANDIR)/man7/
	if [ "$(INSTALL_STATIC)" = 1 ]; then install -m 0644 $(STATIC) $(DESTDIR)$(LIBDIR)/librdmacm.a; fi

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(SOFILE) $(DESTDIR)$(LIBDIR)/librdmacm.so.1 $(DESTDIR)$(LIBDIR)/librdmacm.so \
		$(DESTDIR)$(INCLUDEDIR)/rdma/rdma_cma.h $(DESTDIR)$(INCLUDEDIR)/rdma/rdma_verbs.h \
		$(DESTDIR)$(INCLUDEDIR)/rdma/rsocket.h $(DESTDIR)$(INCLUDEDIR)/rdma/rdma_cma_abi.h \
		$(DESTDIR)$(INCLUDEDIR)/infiniband/ib.h \
		$(DESTDIR)$(PKGCONFIGDIR)/librdmacm.pc \
		$(DESTDIR)$(LIBDIR)/rsocket/librspreload.so $(DESTDIR)$(LIBDIR)/rsocket/librspreload.so.1 \
		$(DESTDIR)$(LIBDIR)/rsocket/librspreload.so.1.0.0
	rm -f $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(p))

# Debian's tooling (debhelper) on this tree; packages replace Debian's
# librdmacm1 and librdmacm-dev (debian/control, README "Installing the packages").
deb: setup-host
	rm -rf $(B)/deb debian/tmp debian/librdmacm1 debian/librdmacm-dev
	mkdir -p $(B)/deb
	debian/rules binary

clean:
	rm -rf $(B) target
	rm -rf debian/.debhelper debian/tmp debian/librdmacm1 debian/librdmacm-dev debian/files \
		debian/*.substvars debian/*.debhelper.log debian/debhelper-build-stamp
