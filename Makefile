# kq -- BSD kqueue/kevent for Linux.
#
#   make                 build build/libkq.so and build/libkq.a
#   make check           build and run every test (plain build)
#   make check-model     the randomized differential test against tests/model/
#   make check-sanitize  every test under ASan+UBSan, concurrency tests under TSan
#   make bench           build kqbench
#   make fuzz            build the libFuzzer targets build-fuzz/fuzz-kevent and
#                        build-fuzz/fuzz-port (clang, ASan+UBSan;
#                        tools/fuzz-run.sh runs them)
#   make install         install into $(DESTDIR)$(PREFIX)
#
#   make check-fault     the fault-injection sweep (tests/fault-sweep.c)
#
# Variables: CC, CFLAGS, LDFLAGS (libkq.so and kqbench), WERROR=1 (CI), SAN=asan|tsan (sanitizer build into
# build-asan/ or build-tsan/), SAN=fault (ASan+UBSan with -DKQ_FAULT, into
# build-fault/: see src/fault.h), SAN=fuzz (clang, libFuzzer coverage + ASan
# + UBSan, into build-fuzz/), SAN=cov (gcc --coverage and -DKQ_FAULT, whose
# hooks are inert until armed, into build-cov/: tools/coverage.sh, which also
# runs the fault-injection sweep there).

CC	?= cc
PREFIX	?= /usr/local
LIBDIR	?= $(PREFIX)/lib
INCDIR	?= $(PREFIX)/include
MANDIR	?= $(PREFIX)/share/man
VERSION	:= 0.1.0
SOVER	:= 0

SAN	?=
ifeq ($(SAN),)
B	:= build
SANFLAGS :=
else ifeq ($(SAN),asan)
B	:= build-asan
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -DKQ_DEBUG
else ifeq ($(SAN),tsan)
B	:= build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else ifeq ($(SAN),fault)
B	:= build-fault
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -DKQ_DEBUG -DKQ_FAULT
else ifeq ($(SAN),fuzz)
B	:= build-fuzz
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -DKQ_DEBUG
else ifeq ($(SAN),cov)
B	:= build-cov
SANFLAGS := --coverage -DKQ_COVERAGE -DKQ_FAULT
endif

WARN	:= -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wpointer-arith -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN	+= -Werror
endif

OPT	?= -O2 -g
BASECFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -Iinclude
# -fno-plt and -z now (below): libkq calls the C library through its GOT
# slots directly, bound at load time, instead of through PLT stubs: fewer
# cold code and data lines on each kevent() wake-up (docs/HTTPD.md).
# -fexceptions: pthread_cleanup_push() (kevent.c's cancellable wait) is a
# cleanup attribute the unwinder runs, not a setjmp and a registration
# on every wait (1.6 % CPU per request in the pinned lighttpd A/B), and a
# siglongjmp() out of a signal handler leaves nothing registered.
LIBCFLAGS  := $(BASECFLAGS) -fPIC -fno-plt -fvisibility=hidden -fexceptions -Isrc
LDLIBS_T   := -lpthread

LIB_SRCS := $(wildcard src/*.c)
LIB_EXPORTS := kqueue kqueuex kqueue1 kevent sigaction signal bsd_signal \
	ssignal sysv_signal __sysv_signal sigset sigignore siginterrupt \
	close dup2 dup3 close_range closefrom getsockopt setsockopt system \
	port_create port_associate port_dissociate port_send port_sendn \
	port_get port_getn port_alert \
	timer_create timer_settime timer_gettime timer_getoverrun timer_delete
ifneq ($(filter fault cov,$(SAN)),)
LIB_EXPORTS += kq_fault_set kq_fault_count kq_olock_token_next
endif
LIB_OBJS := $(LIB_SRCS:src/%.c=$(B)/obj/%.o)
LIB_HDRS := $(wildcard src/*.h) include/sys/event.h include/port.h

TEST_SRCS := $(wildcard tests/test-*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
TEST_HDRS := $(wildcard tests/*.h)

BENCH_SRCS := $(wildcard bench/*.c)
BENCH_HDRS := $(wildcard bench/*.h)

.PHONY: all lib check check-model check-sanitize check-fault tests bench demo install clean man-lint fuzz

all: lib

lib: $(B)/libkq.so $(B)/libkq.a

$(B)/obj/%.o: src/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/libkq.so: $(LIB_OBJS) src/libkq.map
	$(CC) -shared -Wl,-z,now -Wl,-soname,libkq.so.$(SOVER) -Wl,--version-script=src/libkq.map \
	    $(SANFLAGS) $(LDFLAGS) -o $@ $(LIB_OBJS) -lpthread

# The static archive holds one pre-linked object whose only global symbols
# are the public API, so libkq's internals never clash with a program's.
# And the comdat symbols the compiler shares between objects: made local,
# a program's own copy of DW.ref.__gcc_personality_v0 (any C program built
# with -fexceptions) wins the comdat group at the final link and libkq's
# unwind tables point at a discarded section -- a pthread_cancel() of a
# thread in kevent() then crashed in the unwinder (test-cancel is built
# with -fexceptions to keep it so).
LIB_COMDAT := DW.ref.__gcc_personality_v0
$(B)/tests/test-cancel: private CFLAGS += -fexceptions

$(B)/libkq.a: $(LIB_OBJS) Makefile
	rm -f $@
	ld -r -o $(B)/libkq-all.o $(LIB_OBJS)
	objcopy $(addprefix --keep-global-symbol=,$(LIB_EXPORTS) $(LIB_COMDAT)) \
	    $(B)/libkq-all.o
	ar rcs $@ $(B)/libkq-all.o

# Tests link the static library so that sanitizers see the whole program.
$(B)/tests/%: tests/%.c $(TEST_HDRS) $(B)/libkq.a include/sys/event.h include/port.h
	@mkdir -p $(dir $@)
	$(CC) $(BASECFLAGS) $(CFLAGS) -Itests -o $@ $< $(B)/libkq.a -lcmocka $(LDLIBS_T)

# kq's allocator on its own (src/heap.c): the one test that reaches inside
# the library, so it links the object, not the archive (whose internal
# symbols are local).
$(B)/tests/test-heap: tests/test-heap.c $(TEST_HDRS) $(B)/obj/heap.o $(B)/obj/debug.o
	@mkdir -p $(dir $@)
	$(CC) $(BASECFLAGS) $(CFLAGS) -Itests -o $@ $< $(B)/obj/heap.o $(B)/obj/debug.o -lcmocka $(LDLIBS_T)

# The randomized differential test against the reference model; not a
# cmocka binary, so it is not named test-*.
MODEL_SRCS := tests/fuzz-diff.c tests/model/model.c
$(B)/tests/fuzz-diff: $(MODEL_SRCS) tests/model/model.h $(B)/libkq.a include/sys/event.h
	@mkdir -p $(dir $@)
	$(CC) $(BASECFLAGS) $(CFLAGS) -Itests -o $@ $(MODEL_SRCS) $(B)/libkq.a $(LDLIBS_T)

# The fault-injection sweep: only meaningful in the SAN=fault and SAN=cov
# builds (-DKQ_FAULT), and not named test-* so that tools/run-tests.sh leaves
# it alone.
$(B)/tests/fault-sweep: tests/fault-sweep.c $(TEST_HDRS) $(B)/libkq.a include/sys/event.h
	@mkdir -p $(dir $@)
	$(CC) $(BASECFLAGS) $(CFLAGS) -Itests -o $@ $< $(B)/libkq.a $(LDLIBS_T)

# Lock tokens drawn 2^31 and 2^32 apart (the same builds' hook,
# kq_olock_token_next).
$(B)/tests/token-wrap: tests/token-wrap.c $(B)/libkq.a include/sys/event.h
	@mkdir -p $(dir $@)
	$(CC) $(BASECFLAGS) $(CFLAGS) -Itests -o $@ $< $(B)/libkq.a $(LDLIBS_T)

tests: $(TEST_BINS) $(B)/tests/fuzz-diff
ifneq ($(filter fault cov,$(SAN)),)
tests: $(B)/tests/fault-sweep $(B)/tests/token-wrap
endif

check: tests
	@tools/run-tests.sh $(B)

# The differential test: the fixed CI seeds, then KQ_MODEL_SECONDS (60) of
# random seeds.
check-model: $(B)/tests/fuzz-diff
	$(B)/tests/fuzz-diff

check-fault:
	$(MAKE) SAN=fault build-fault/tests/fault-sweep build-fault/tests/token-wrap
	build-fault/tests/fault-sweep
	build-fault/tests/token-wrap

check-sanitize:
	$(MAKE) SAN=asan tests
	tools/run-tests.sh build-asan
	$(MAKE) SAN=tsan CC=clang tests
	tools/run-tests.sh build-tsan

# The libFuzzer target (SAN=fuzz, CC=clang: `make fuzz`), and the same
# target driven by a plain main() over corpus files (any build).
FUZZ_SRCS := tests/fuzz/fuzz-kevent.c
$(B)/fuzz-kevent: $(FUZZ_SRCS) $(B)/libkq.a include/sys/event.h
	$(CC) $(BASECFLAGS) $(CFLAGS) -fsanitize=fuzzer -o $@ $(FUZZ_SRCS) $(B)/libkq.a $(LDLIBS_T)

$(B)/fuzz-kevent-standalone: $(FUZZ_SRCS) tests/fuzz/standalone-main.c $(B)/libkq.a include/sys/event.h
	$(CC) $(BASECFLAGS) $(CFLAGS) -o $@ $(FUZZ_SRCS) tests/fuzz/standalone-main.c $(B)/libkq.a $(LDLIBS_T)

# The event-port front end's target (tests/fuzz/fuzz-port.c), likewise.
$(B)/fuzz-port: tests/fuzz/fuzz-port.c $(B)/libkq.a include/sys/event.h include/port.h
	$(CC) $(BASECFLAGS) $(CFLAGS) -fsanitize=fuzzer -o $@ tests/fuzz/fuzz-port.c $(B)/libkq.a $(LDLIBS_T)

$(B)/fuzz-port-standalone: tests/fuzz/fuzz-port.c tests/fuzz/standalone-main.c $(B)/libkq.a include/sys/event.h include/port.h
	$(CC) $(BASECFLAGS) $(CFLAGS) -o $@ tests/fuzz/fuzz-port.c tests/fuzz/standalone-main.c $(B)/libkq.a $(LDLIBS_T)

fuzz:
	$(MAKE) SAN=fuzz CC=clang build-fuzz/fuzz-kevent build-fuzz/fuzz-port

$(B)/kqbench: $(BENCH_SRCS) $(BENCH_HDRS) $(B)/libkq.a
	@mkdir -p $(dir $@)
	$(CC) $(BASECFLAGS) $(CFLAGS) -Ibench $(LDFLAGS) -o $@ $(BENCH_SRCS) $(B)/libkq.a -lpthread -lm

bench: $(B)/kqbench

$(B)/demo: examples/demo.c $(B)/libkq.a
	$(CC) $(BASECFLAGS) $(CFLAGS) -o $@ $< $(B)/libkq.a -lpthread

demo: $(B)/demo

man-lint:
	mandoc -Tlint -W warning man/*.2 man/*.3

install: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR)/kq/sys \
	    $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/kq \
	    $(DESTDIR)$(MANDIR)/man2 $(DESTDIR)$(MANDIR)/man3
	install -m 644 include/sys/event.h $(DESTDIR)$(INCDIR)/kq/sys/event.h
	install -m 644 include/port.h $(DESTDIR)$(INCDIR)/kq/port.h
	install -m 755 $(B)/libkq.so $(DESTDIR)$(LIBDIR)/libkq.so.$(VERSION)
	ln -sf libkq.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libkq.so.$(SOVER)
	ln -sf libkq.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libkq.so
	install -m 644 $(B)/libkq.a $(DESTDIR)$(LIBDIR)/libkq.a
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCDIR@|$(INCDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    kq.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/kq.pc
	sed -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCDIR@|$(INCDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' \
	    cmake/kqConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/kq/kqConfig.cmake
	install -m 644 man/kqueue.2 man/kevent.2 $(DESTDIR)$(MANDIR)/man2/
	install -m 644 man/port_create.3 man/port_associate.3 man/port_get.3 \
	    man/port_send.3 man/port_alert.3 $(DESTDIR)$(MANDIR)/man3/
	for p in port_dissociate:port_associate port_getn:port_get \
	    port_sendn:port_send; do \
		echo ".so man3/$${p#*:}.3" > $(DESTDIR)$(MANDIR)/man3/$${p%:*}.3; \
	done

clean:
	rm -rf build build-asan build-tsan build-fault build-fuzz build-cov
