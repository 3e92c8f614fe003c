# slowburn — build in the libbpf-tools manner: bpf/X.bpf.c -> X.bpf.o -> X.skel.h,
# then a C++20 library, the CLI, the tests. Everything generated lands in $(BUILD).
#
#   make            build/slowburn
#   make deps       install missing Debian packages, and the MCP test client's npm packages into $(BUILD)/node (idempotent)
#   make test       deps + build + unit, BPF and scenario tests
#   make test-kernels  deps + build + the kernel matrix under QEMU (docs/kernel-support.md)
#   make test-nodes    deps + build + one MPI job across two QEMU guests, analyzed here
#   make demo       deps + build + run the bundled straggler demo
#   make bench      deps + build + benchmarks (results: bench/RESULTS.md)
#   make install PREFIX=/usr/local   (DESTDIR, BINDIR too)
#   make deb        build/slowburn_VERSION_amd64.deb (binary in /usr/sbin, man pages, completion, unit, rules)
#   make format     clang-format the sources (format-check: fail if any is not)
#   V=1             show the commands

BUILD      ?= build
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
DESTDIR    ?=
CLANG      ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL    ?= bpftool
CXX        ?= g++
CC         ?= gcc
MPICC      ?= mpicc
MPICC_MPICH ?= mpicc.mpich
ARCH       := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

ifeq ($(V),1)
Q   =
msg =
else
Q   = @
msg = @printf '  %-9s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.DEFAULT_GOAL := all

# ---------------------------------------------------------------- BPF
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/skel/%.skel.h,$(BPF_SRCS))
.SECONDARY: $(BPF_OBJS) $(SKELS) # generated, never intermediate: deleting them would rebuild every object next time
# -mcpu=v3: atomic compare-and-swap (Linux 5.12+; slowburn needs 5.15).
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
              -Ivmlinux -Iinclude -Ibpf

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h include/slowburn/*.h) vmlinux/vmlinux.h | $(BUILD)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(BUILD)/skel/%.skel.h: $(BUILD)/bpf/%.bpf.o | $(BUILD)/skel
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bpf > $@

# ---------------------------------------------------------------- C++
# -g1 (line tables: backtraces and profiles name the line) rather than -g:
# full debug info cost ~35% of every object's compile time (a clean build
# took 13.3 min on a 2-core machine, most of `make test`'s time budget).
# make CXXFLAGS='-O2 -g' for a debugger's view of locals and types.
CXXFLAGS ?= -O2 -g1
SB_CXXFLAGS := -std=c++20 -Wall -Wextra -Werror -Iinclude -Iuser -I. -I$(BUILD)/skel -MMD -MP
# cpp-httplib (the scenario tests' HTTP client; the endpoint is our own): its
# flags come from pkg-config, read
# after `make deps` because every build runs in a make started after it.
HTTPLIB_CFLAGS := $(shell pkg-config --cflags cpp-httplib 2>/dev/null)
HTTPLIB_LIBS   := $(shell pkg-config --libs cpp-httplib 2>/dev/null || echo -lcpp-httplib)
# `slowburn check` attaches to its own function: exported to .dynsym, it survives strip (dh_strip, install -s).
CHECK_TARGET_EXPORT := -Wl,--export-dynamic-symbol=slowburn_check_probe_target
LDLIBS   := -lbpf -ldw -lelf -lz -lfmt -lpthread -lSQLiteCpp -lsqlite3

LIB_SRCS  := $(shell find user -name '*.cpp' ! -path 'user/cli/*' | sort)
TOOL_SRCS := $(sort $(wildcard tools/*.cpp))
CLI_SRCS  := $(sort $(wildcard user/cli/*.cpp))
LIB_OBJS  := $(patsubst %.cpp,$(BUILD)/obj/%.o,$(LIB_SRCS))
CLI_OBJS  := $(patsubst %.cpp,$(BUILD)/obj/%.o,$(CLI_SRCS) $(TOOL_SRCS))
LIB       := $(BUILD)/libslowburn.a
CLI       := $(BUILD)/slowburn
VERSION   := $(shell sed -n 's/.*kSlowburnVersion = "\(.*\)";/\1/p' user/cli/command.h)
# Man pages and bash completion (rules below, with install).
MAN_DIR    := $(BUILD)/man
MAN_STAMP  := $(MAN_DIR)/.stamp
COMPLETION := $(BUILD)/completion/slowburn
DEB       := $(BUILD)/slowburn_$(VERSION)_$(shell dpkg --print-architecture 2>/dev/null || echo amd64).deb
WORKLOAD  := $(BUILD)/libexec/slowburn-mpi-workload
DDP_WORKLOAD := $(BUILD)/libexec/slowburn-ddp-workload.py
MPI4PY_WORKLOAD := $(BUILD)/libexec/slowburn-mpi4py-workload.py

# Skeletons are generated headers: every object waits for them.
$(BUILD)/obj/%.o: %.cpp | $(SKELS)
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CXXFLAGS) $(SB_CXXFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CLI): $(CLI_OBJS) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS) $(CHECK_TARGET_EXPORT)

$(DDP_WORKLOAD): user/demo/ddp_workload.py
	@mkdir -p $(@D)
	$(call msg,INSTALL,$@)
	$(Q)install -m 0755 $< $@

$(MPI4PY_WORKLOAD): user/demo/mpi4py_workload.py
	@mkdir -p $(@D)
	$(call msg,INSTALL,$@)
	$(Q)install -m 0755 $< $@

$(WORKLOAD): user/demo/mpi_workload.c
	@mkdir -p $(@D)
	$(call msg,MPICC,$@)
	$(Q)$(MPICC) -O2 -Wall -Wextra -Werror -o $@ $<

# ---------------------------------------------------------------- tests
# Test code runs once: unoptimised, with line tables and functions for a
# failure's backtrace (-g1: the three test binaries in 85 s from scratch on
# this 2-core machine, 104 s with -g; the library they link is built with
# CXXFLAGS). make TEST_OPT='-O0 -g' for their locals in a debugger.
TEST_OPT      ?= -O0 -g1
TEST_CXXFLAGS := $(SB_CXXFLAGS) -Itests -DSLOWBURN_SOURCE_DIR=\"$(CURDIR)\" -DSLOWBURN_BUILD_DIR=\"$(abspath $(BUILD))\"
UNIT_SRCS     := $(sort $(wildcard tests/unit/*.cpp))
BPF_TEST_SRCS := $(sort $(wildcard tests/bpf/*.cpp))
SCEN_SRCS     := $(sort $(wildcard tests/scenario/*.cpp))
TEST_SUPPORT  := $(sort $(wildcard tests/support/*.cpp))

# Tests compile in groups of TEST_GROUP files, one translation unit each
# (build/unity/<dir>/<first file>.cpp #includes them): GoogleTest's and
# nlohmann-json's headers and templates are parsed and instantiated once a
# group, not once a file. 12 test files took 66 s apart and 22 s as one, on
# CI's 2-core machine; a change to one file recompiles its group. Test files
# therefore keep their helpers in distinct names (or in tests/support).
# Groups of 12: the three test binaries from scratch in 104 s on this 2-core
# machine, 117 s in groups of 8.
TEST_GROUP    ?= 12
comma         := ,
# $(call test_groups,DIR,SRCS): each group as "DIR/<first file>=a.cpp,b.cpp,..."
test_groups    = $(foreach g,$(shell printf '%s\n' $(2) | xargs -n $(TEST_GROUP) | tr ' ' ','),$(1)/$(basename $(notdir $(firstword $(subst $(comma), ,$(g)))))=$(g))
define test_group_rule
$(BUILD)/unity/$(1).cpp: FORCE
	@mkdir -p $$(@D)
	@printf '#include "%s"\n' $(subst $(comma), ,$(2)) > $$@.new
	@if cmp -s $$@.new $$@; then rm -f $$@.new; else mv $$@.new $$@; fi
endef
ALL_TEST_GROUPS := $(call test_groups,unit,$(UNIT_SRCS)) $(call test_groups,bpf,$(BPF_TEST_SRCS)) \
                   $(call test_groups,scenario,$(SCEN_SRCS)) $(call test_groups,support,$(TEST_SUPPORT))
$(foreach g,$(ALL_TEST_GROUPS),$(eval $(call test_group_rule,$(firstword $(subst =, ,$(g))),$(lastword $(subst =, ,$(g))))))
group_objs     = $(foreach g,$(filter $(1)/%,$(ALL_TEST_GROUPS)),$(BUILD)/obj/unity/$(firstword $(subst =, ,$(g))).o)
UNIT_OBJS     := $(call group_objs,unit)
BPF_TEST_OBJS := $(call group_objs,bpf)
SCEN_OBJS     := $(call group_objs,scenario)
SUPPORT_OBJS  := $(call group_objs,support)
.PHONY: FORCE
FORCE:
$(SCEN_OBJS): TEST_CXXFLAGS += $(HTTPLIB_CFLAGS)
UNIT_BIN      := $(BUILD)/tests/unit_tests
BPF_TEST_BIN  := $(BUILD)/tests/bpf_tests
SCEN_BIN      := $(BUILD)/tests/scenario_tests

$(BUILD)/obj/unity/%.o: $(BUILD)/unity/%.cpp | $(SKELS)
	@mkdir -p $(@D)
	$(call msg,CXX,$@ ($(shell grep -c . $<) files))
	$(Q)$(CXX) $(CXXFLAGS) $(TEST_OPT) $(TEST_CXXFLAGS) -c $< -o $@

$(UNIT_BIN): $(UNIT_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lgmock -lgtest_main -lgtest $(LDLIBS)

$(BPF_TEST_BIN): $(BPF_TEST_OBJS) $(SUPPORT_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lgmock -lgtest_main -lgtest $(LDLIBS) -ldl

$(SCEN_BIN): $(SCEN_OBJS) $(SUPPORT_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lgmock -lgtest_main -lgtest $(LDLIBS) $(HTTPLIB_LIBS)

# Test targets: small programs the BPF tests attach to (tests/targets/README.md).
TARGET_DIR := $(BUILD)/tests/targets
TARGETS := $(TARGET_DIR)/call_counter $(TARGET_DIR)/mpi_allreduce_loop $(TARGET_DIR)/gpu_lib_caller \
           $(TARGET_DIR)/standin/libmpi.so.99 $(TARGET_DIR)/standin_rank \
           $(TARGET_DIR)/ncclib/libnccl.so.2 $(TARGET_DIR)/ncclib_driver $(TARGET_DIR)/ncclib-old/libnccl.so.2 \
           $(TARGET_DIR)/debuglink/libsbdebug.so $(TARGET_DIR)/debuglink/libsbdebug-full.so \
           $(TARGET_DIR)/verbs/libibverbs.so.1 $(TARGET_DIR)/verbs_driver $(TARGET_DIR)/verbs_real_caller \
           $(TARGET_DIR)/verbs_qp_driver \
           $(TARGET_DIR)/rc_peer $(TARGET_DIR)/tcp_loss_peer $(TARGET_DIR)/lossy_link \
           $(TARGET_DIR)/ncclapi/libnccl.so.2 $(TARGET_DIR)/nccl_ranks \
           $(TARGET_DIR)/mpich-workload
# CPython 3.11's offsets from its headers, where libpython3.11-dev is installed.
PY311_INCLUDE := /usr/include/python3.11
ifneq ($(wildcard $(PY311_INCLUDE)/internal/pycore_frame.h),)
TARGETS += $(TARGET_DIR)/python311_offsets
endif

$(TARGET_DIR)/call_counter: tests/targets/call_counter.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -fno-inline -o $@ $<

$(TARGET_DIR)/gpu_lib_caller: tests/targets/gpu_lib_caller.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -ldl

# A stand-in libmpi exporting MPI_Allreduce only, and a "rank" linked to it.
$(TARGET_DIR)/standin/libmpi.so.99: tests/targets/standin_mpi.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -shared -fPIC -Wl,-soname,libmpi.so.99 -o $@ $<

$(TARGET_DIR)/standin_rank: tests/targets/standin_rank.c $(TARGET_DIR)/standin/libmpi.so.99
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -L$(TARGET_DIR)/standin -l:libmpi.so.99 \
		-Wl,-rpath,$(abspath $(TARGET_DIR)/standin)

# NCCL IB stand-in: hidden C++ functions with NCCL 2.26-2.28's signatures.
$(TARGET_DIR)/ncclib/libnccl.so.2: tests/targets/ncclib_standin.cpp
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -Wl,-soname,libnccl.so.2 -o $@ $<

$(TARGET_DIR)/ncclib_driver: tests/targets/ncclib_driver.c $(TARGET_DIR)/ncclib/libnccl.so.2
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -L$(TARGET_DIR)/ncclib -l:libnccl.so.2 \
		-Wl,-rpath,$(abspath $(TARGET_DIR)/ncclib)

$(TARGET_DIR)/ncclib-old/libnccl.so.2: tests/targets/ncclib_old_signature.cpp
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -Wall -Wextra -Werror -shared -fPIC -o $@ $<

# The same library twice: with its symbol table, and stripped with the
# symbols in a .gnu_debuglink'd debug file.
$(TARGET_DIR)/debuglink/libsbdebug-full.so: tests/targets/debuglink_lib.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -shared -fPIC -o $@ $<

$(TARGET_DIR)/debuglink/libsbdebug.so: $(TARGET_DIR)/debuglink/libsbdebug-full.so
	$(call msg,STRIP,$@)
	$(Q)objcopy --only-keep-debug $< $(@D)/libsbdebug.so.debug
	$(Q)objcopy --strip-all --add-gnu-debuglink=$(@D)/libsbdebug.so.debug $< $@

# NCCL's public communicator API, stand-in: nccl.h's signatures, ranks that
# meet through shared memory.
$(TARGET_DIR)/ncclapi/libnccl.so.2: tests/targets/nccl_api_standin.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -shared -fPIC -Wl,-soname,libnccl.so.2 -o $@ $< -lrt

$(TARGET_DIR)/nccl_ranks: tests/targets/nccl_ranks.c $(TARGET_DIR)/ncclapi/libnccl.so.2
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -L$(TARGET_DIR)/ncclapi -l:libnccl.so.2 \
		-Wl,-rpath,$(abspath $(TARGET_DIR)/ncclapi)

# libibverbs stand-in (no RDMA device here): the real signatures and structs.
$(TARGET_DIR)/verbs/libibverbs.so.1: tests/targets/verbs_standin.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -shared -fPIC -Wl,-soname,libibverbs.so.1 -o $@ $<

$(TARGET_DIR)/verbs_driver: tests/targets/verbs_driver.c $(TARGET_DIR)/verbs/libibverbs.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -L$(TARGET_DIR)/verbs -l:libibverbs.so.1 \
		-Wl,-rpath,$(abspath $(TARGET_DIR)/verbs)

# A stand-in provider, stripped as Debian's are: found through a context's ops only.
$(TARGET_DIR)/verbs/libsbprov-rdmav34.so: tests/targets/verbs_provider_standin.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -Wall -Wextra -Werror -shared -fPIC -s -o $@ $<

$(TARGET_DIR)/verbs_qp_driver: tests/targets/verbs_qp_driver.c $(TARGET_DIR)/verbs/libibverbs.so.1 \
		$(TARGET_DIR)/verbs/libsbprov-rdmav34.so
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -L$(TARGET_DIR)/verbs -l:libibverbs.so.1 \
		-l:libsbprov-rdmav34.so -Wl,-rpath,$(abspath $(TARGET_DIR)/verbs)

# One end of a real RC connection with a set retry count (the kernel matrix's rxe faults).
$(TARGET_DIR)/rc_peer: tests/targets/rc_peer.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -libverbs

# A TCP connection over a lossy loopback in a network namespace of its own
# (bpf/lossy_port.bpf.c drops its segments): the TCP evidence's real test.
$(TARGET_DIR)/tcp_loss_peer: tests/targets/tcp_loss_peer.cpp $(BUILD)/skel/lossy_port.skel.h
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O1 -g -Wall -Wextra -Werror -I$(BUILD)/skel -o $@ $< -lbpf -lpthread

# The same dropper on the bridge port of one rank's link (ingress): a
# real job's lossy rank (tests/scenario/inside_scenario_test.cpp).
$(TARGET_DIR)/lossy_link: tests/targets/lossy_link.cpp $(BUILD)/skel/lossy_port.skel.h
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 -O1 -g -Wall -Wextra -Werror -I$(BUILD)/skel -o $@ $< -lbpf

$(TARGET_DIR)/verbs_real_caller: tests/targets/verbs_real_caller.c
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Wall -Wextra -Werror -o $@ $< -libverbs

$(TARGET_DIR)/python311_offsets: tests/targets/python311_offsets.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -Wall -Wextra -Werror -I$(PY311_INCLUDE) -o $@ $<

# The demo workload built against MPICH (Debian's mpich beside Open MPI): the
# MPICH-family tests' job.
$(TARGET_DIR)/mpich-workload: user/demo/mpi_workload.c
	@mkdir -p $(@D)
	$(call msg,MPICC,$@)
	$(Q)$(MPICC_MPICH) -O2 -Wall -Wextra -Werror -o $@ $<

$(TARGET_DIR)/mpi_allreduce_loop: tests/targets/mpi_allreduce_loop.c
	@mkdir -p $(@D)
	$(call msg,MPICC,$@)
	$(Q)$(MPICC) -O1 -g -Wall -Wextra -Werror -o $@ $<

# ---------------------------------------------------------------- fuzz
# libFuzzer (clang 14 + libclang-rt-14-dev), with ASan and UBSan. One target
# per parser family of untrusted input: tests/fuzz/NAME_fuzz.cpp, linked
# with FUZZ_SRCS_NAME, run on the seed corpus tests/fuzz/corpus/NAME with
# inputs up to FUZZ_MAX_LEN_NAME bytes (tests/fuzz/README.md says what each
# covers). A new target is one more name and its two variables.
CLANGXX      ?= clang++
FUZZ_SECONDS ?= 60
FUZZ_NAMES   := xid health elf tracefs procfs sysfs ethtool mcp recording comm
FUZZ_BINS    := $(patsubst %,$(BUILD)/fuzz/%_fuzz,$(FUZZ_NAMES))
# Each source is compiled once into an instrumented object that every
# target naming it shares (targets share their error, string and file code;
# compiling each target's sources in one command built 73 objects, now 46),
# with its header dependencies (a header's change rebuilt none before).
# Line tables only: a crash's report has its files and lines (79 s to build
# the ten targets here, 90 s with full debug info).
FUZZ_OBJ      := $(BUILD)/fuzz/obj
FUZZ_CXXFLAGS := -std=c++20 -gline-tables-only -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
		-Iinclude -Iuser -DSLOWBURN_SOURCE_DIR=\"$(CURDIR)\" -MMD -MP
FUZZ_LINK     = $(CLANGXX) -g -fsanitize=fuzzer,address,undefined -o $@ $^ $(FUZZ_LIBS_$*) -lfmt
FUZZ_MAX_LEN_DEFAULT := 4096
# One fuzzer's run (the shell commands of `make fuzz`, for $(1)).
fuzz_run = rm -rf $(BUILD)/fuzz/corpus-$(1) && mkdir -p $(BUILD)/fuzz/corpus-$(1) && \
	cp tests/fuzz/corpus/$(1)/* $(BUILD)/fuzz/corpus-$(1)/ && echo "fuzz: $(1) for $(FUZZ_SECONDS) s" && \
	$(BUILD)/fuzz/$(1)_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=5 -rss_limit_mb=2048 \
		-max_len=$(or $(FUZZ_MAX_LEN_$(1)),$(FUZZ_MAX_LEN_DEFAULT)) -print_final_stats=1 \
		-artifact_prefix=$(BUILD)/fuzz/$(1)- $(BUILD)/fuzz/corpus-$(1)

FUZZ_SRCS_xid := user/nvidia/xid.cpp user/nvidia/xid_catalog.cpp
FUZZ_MAX_LEN_xid := 512
# The health parsers (kernel log lines, CPU lists, taint, IB port files, the DCB netlink reply).
FUZZ_SRCS_health := user/health/health_parsers.cpp user/core/cpu_list.cpp user/health/check_row.cpp user/net/dcb.cpp user/nvidia/xid_catalog.cpp \
		user/nvidia/xid.cpp user/core/strings.cpp user/core/error.cpp
FUZZ_MAX_LEN_health := 512
# ELF images: the symbol reader of every library a probe attaches to.
FUZZ_SRCS_elf := user/symbols/elf_symbols.cpp user/core/error.cpp
FUZZ_LIBS_elf := -lelf -lz
FUZZ_MAX_LEN_elf := 65536
# tracefs `format` files, and raw records decoded through them.
# procfs and cgroup files: environ, cmdline, maps, stat, status, cgroup, cpu.*, PSI, CapEff, mounts.
FUZZ_SRCS_procfs := user/procfs/environ.cpp user/procfs/maps.cpp user/procfs/ranks.cpp user/host/host_parsers.cpp user/core/cpu_list.cpp \
		user/check/check_parsers.cpp user/health/health_parsers.cpp user/health/check_row.cpp \
		user/nvidia/xid.cpp user/core/files.cpp user/core/strings.cpp user/core/error.cpp
# sysfs attributes (PCI link, config space, AER and RDMA counters) and the rank hints mapped on a topology.
FUZZ_SRCS_sysfs := user/pcie/aer.cpp user/pcie/link.cpp user/rdma/counter_delta.cpp user/sysfs/pci_devices.cpp \
		user/sysfs/topology.cpp user/sysfs/rdma_ports.cpp user/tracefs/format.cpp user/core/rank_identity.cpp \
		user/core/files.cpp user/core/strings.cpp user/core/error.cpp
# The MCP server's stdin: JSON-RPC lines, tool arguments checked against their schemas.
FUZZ_SRCS_mcp := user/mcp/mcp_stdio.cpp user/mcp/mcp_server.cpp user/mcp/json_schema.cpp user/core/error.cpp
FUZZ_MAX_LEN_mcp := 16384
# `ethtool -S` captures (slowburn fabric --ethtool-dir).
FUZZ_SRCS_ethtool := user/net/ethtool_dump.cpp user/core/strings.cpp user/core/error.cpp
# Recordings (slowburn analyze): SQLite files, or SQL scripts that write one.
FUZZ_SRCS_recording := user/record/recording_reader.cpp user/probes/probe_status.cpp user/probes/catalog.cpp user/events/process_view.cpp user/core/format.cpp \
		user/events/communicator.cpp user/core/rank_identity.cpp user/core/strings.cpp user/core/error.cpp
FUZZ_LIBS_recording := -lSQLiteCpp -lsqlite3
FUZZ_MAX_LEN_recording := 16384
# Open MPI and MPICH communicators read from a rank's memory (layout discovery, members).
FUZZ_MAX_LEN_comm := 8192
FUZZ_SRCS_comm := user/comm/ompi_comm.cpp user/comm/mpich_comm.cpp user/core/error.cpp
FUZZ_SRCS_tracefs := user/tracefs/format.cpp user/pcie/aer.cpp user/pcie/link.cpp user/sysfs/pci_devices.cpp user/core/files.cpp user/nvidia/xid_record.cpp \
		user/nvidia/xid.cpp user/core/strings.cpp user/core/error.cpp

# A target's objects (a function: a % written in the rule itself would be taken for its stem).
fuzz_objs = $(patsubst %.cpp,$(FUZZ_OBJ)/%.o,$(FUZZ_SRCS_$(1)))
.PRECIOUS: $(FUZZ_OBJ)/%.o
$(FUZZ_OBJ)/%.o: %.cpp
	@mkdir -p $(@D)
	$(call msg,FUZZCXX,$@)
	$(Q)$(CLANGXX) $(FUZZ_CXXFLAGS) -c $< -o $@

.SECONDEXPANSION:
$(BUILD)/fuzz/%_fuzz: $(FUZZ_OBJ)/tests/fuzz/%_fuzz.o $$(call fuzz_objs,$$*)
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_LINK)

# ---------------------------------------------------------------- bench
BENCH_DECODE := $(BUILD)/bench/decode_bench
BENCH_COST   := $(BUILD)/bench/probe_cost
BENCH_TARGET := $(BUILD)/bench/call_loop
BENCH_KMSG   := $(BUILD)/bench/kmsg_cost
BENCH_IB     := $(BUILD)/bench/ib_cost
BENCH_IBLOOP := $(BUILD)/bench/ib_poll_loop
BENCH_QPLOOP := $(BUILD)/bench/qp_loop
BENCH_SYNTH  := $(BUILD)/bench/synth_recordings
BENCH_SCHED  := $(BUILD)/bench/sched_cost
BENCH_TOGGLE := $(BUILD)/bench/toggle_cost
BENCH_TCP    := $(BUILD)/bench/tcp_cost

$(BUILD)/obj/bench/%.o: bench/%.cpp | $(SKELS)
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CXXFLAGS) $(SB_CXXFLAGS) -c $< -o $@

$(BENCH_DECODE): $(BUILD)/obj/bench/decode_bench.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lbenchmark $(LDLIBS)

$(BENCH_COST): $(BUILD)/obj/bench/probe_cost.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_KMSG): $(BUILD)/obj/bench/kmsg_cost.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_IB): $(BUILD)/obj/bench/ib_cost.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_SCHED): $(BUILD)/obj/bench/sched_cost.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_TCP): $(BUILD)/obj/bench/tcp_cost.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_TOGGLE): $(BUILD)/obj/bench/toggle_cost.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_SYNTH): $(BUILD)/obj/bench/synth_recordings.o $(LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_IBLOOP): bench/ib_poll_loop.cpp
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O2 -g -Wall -Wextra -Werror -o $@ $<

$(BENCH_QPLOOP): bench/qp_loop.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $<

$(BENCH_TARGET): bench/call_loop.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -fno-inline -o $@ $<

# ---------------------------------------------------------------- phony
.PHONY: all man deps build tests test run-tests test-kernels test-kernels-ci test-nodes demo bench bench-first-finding bench-fleet-alert run-bench fuzz install deb format format-check clean

all: $(CLI) $(WORKLOAD) $(DDP_WORKLOAD) $(MPI4PY_WORKLOAD)

build: all

deps:
	$(Q)scripts/deps.sh $(BUILD)

# The test binaries first: their unity objects are the longest compiles,
# and started last they ran alone on one core at the end of the build; first,
# the library's many short ones fill in beside them.
tests: $(SCEN_BIN) $(BPF_TEST_BIN) $(UNIT_BIN) all $(TARGETS) $(FUZZ_BINS) $(MAN_STAMP) $(COMPLETION) $(DEB)

# The build sub-makes use every core unless make was given -j (JOBS=1 for
# one): a plain `make test` on a 2-core CI machine built on one before.
JOBS     ?= $(shell nproc)
PARALLEL  = $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(JOBS))

# The dependency install runs in its own make so this make's view of the
# system (headers, tools) is taken after it.
test:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory format-check
	$(Q)$(MAKE) --no-print-directory $(PARALLEL) tests
	$(Q)$(MAKE) --no-print-directory run-tests

run-tests:
	$(Q)scripts/run-tests.sh $(BUILD)

# The kernel matrix (tests/kernels/README.md): Debian 12's 6.1 and the 6.12
# backports kernel under QEMU, and this machine's kernel; writes
# docs/kernel-support.md. SB_KERNELS=bookworm boots only 6.1.
test-kernels:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(PARALLEL) all $(TARGET_DIR)/rc_peer $(BPF_TEST_BIN) $(SCEN_BIN)
	$(Q)tests/kernels/matrix.sh $(BUILD)

# The part of the matrix CI runs (.ci/run; the whole takes ~4-5 min, which
# the CI time rule cannot hold): 6.1 only, which has what the host lacks
# (kprobes, ras:aer_event, no multi-uprobe links, Soft-RoCE on it), without
# hotplug and without the UCX job (17 s of the guest: OpenMPI over rxe,
# traced end to end; make test-kernels runs it).
test-kernels-ci:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(PARALLEL) all $(TARGET_DIR)/rc_peer $(BPF_TEST_BIN) $(SCEN_BIN)
	$(Q)SB_KERNELS=bookworm SB_HOST=0 SB_TESTS=check,formats,kernel_log,aer,kprobe,mpi,rxe tests/kernels/matrix.sh $(BUILD)

# Two QEMU guests (6.12) as two nodes of one Open MPI job over TCP, each
# with its own kernel and clocks: trace --record in each, analyze here
# (tests/kernels/README.md "Across nodes"). ~2 min; not in CI (the time rule).
test-nodes:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(PARALLEL) all
	$(Q)tests/kernels/nodes.sh $(BUILD)

demo:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(PARALLEL) all
	$(Q)$(CLI) demo $(DEMO_ARGS)

bench:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(PARALLEL) all $(BENCH_DECODE) $(BENCH_COST) $(BENCH_TARGET) $(BENCH_KMSG) $(BENCH_IB) $(BENCH_IBLOOP) $(BENCH_QPLOOP) $(BENCH_SYNTH) $(BENCH_SCHED) $(BENCH_TOGGLE) $(BENCH_TCP)
		$(Q)bench/run.sh $(BUILD)
	$(Q)bench/service.sh $(BUILD) | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/alternate.py $(BUILD) --cycles 18 --phase-s 12 --settle-s 4 | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/alternate.py $(BUILD) --cycles 5 --phase-s 12 --settle-s 3 --config 'toggles 5/s at MPI_Comm_spawn=toggles:5' \
		--config 'toggles 5/s at MPI_Allreduce=toggles:5:MPI_Allreduce' --config 'placebo (no service)=none' \
		| tee -a $(BUILD)/bench/latest.md
	$(Q)bench/record.sh $(BUILD) | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/scale.sh $(BUILD) | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/probe_slow_burn.sh $(BUILD) | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/host.sh $(BUILD) | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/first_finding.sh $(BUILD) | tee -a $(BUILD)/bench/latest.md
	$(Q)bench/fleet_alert.py $(BUILD) | tee -a $(BUILD)/bench/latest.md

# Time to the first finding in `slowburn trace` (RUNS runs with a 1.3x rank)
# and false findings (RUNS healthy runs): bench/RESULTS.md, section 16.
bench-first-finding: all
	$(Q)bench/first_finding.sh $(BUILD)

# Seconds from a job's launch to the SlowburnStraggler alert in a real
# Prometheus over `slowburn probe` (20 runs, 1.3x rank), false ones over
# healthy jobs: bench/RESULTS.md.
bench-fleet-alert: all
	$(Q)bench/fleet_alert.py $(BUILD)

# Runs each fuzzer (FUZZ_NAMES) for FUZZ_SECONDS on a copy of its seed
# corpus (tests/fuzz/corpus/NAME): FUZZ_SECONDS is per fuzzer, the whole
# run takes that times the number of fuzzers. A crash stops the run and
# leaves the input in $(BUILD)/fuzz/NAME-crash-*.
fuzz:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)$(foreach name,$(FUZZ_NAMES),$(call fuzz_run,$(name)) && ) true

DEPLOY_FILES := $(shell find deploy -type f ! -name '*.md' | sort)

# Man pages and bash completion, generated from the command definitions
# (help2man on each command's --help; `slowburn completion bash`).
$(MAN_STAMP): $(CLI) scripts/make-man.sh
	$(call msg,MAN,$(MAN_DIR))
	$(Q)rm -rf $(MAN_DIR) && scripts/make-man.sh $(CLI) $(MAN_DIR) $(VERSION) && touch $@
$(COMPLETION): $(CLI)
	@mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)$(CLI) completion bash > $@
man: $(MAN_STAMP) $(COMPLETION)

install: all man
	install -D -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/slowburn
	install -D -m 0644 $(COMPLETION) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/slowburn
	$(Q)for f in $(MAN_DIR)/*.8; do install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/man/man8/$${f##*/} || exit 1; done
	install -D -m 0755 $(WORKLOAD) $(DESTDIR)$(PREFIX)/libexec/slowburn/slowburn-mpi-workload
	install -D -m 0755 $(DDP_WORKLOAD) $(DESTDIR)$(PREFIX)/libexec/slowburn/slowburn-ddp-workload.py
	$(Q)for f in $(DEPLOY_FILES); do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/slowburn/$${f#deploy/} || exit 1; \
	done

# The Debian package (scripts/make-deb.sh): make install into a staging
# root with PREFIX=/usr and the binary in /usr/sbin, then dpkg-deb.
deb: $(DEB)
$(DEB): $(CLI) $(WORKLOAD) $(DDP_WORKLOAD) $(MPI4PY_WORKLOAD) $(MAN_STAMP) $(COMPLETION) $(DEPLOY_FILES) scripts/make-deb.sh
	$(call msg,DEB,$@)
	+$(Q)scripts/make-deb.sh $(BUILD) $(VERSION) >/dev/null

# C++ in the house style (.clang-format), the BPF side and the ABI headers it
# shares in kernel style (bpf/.clang-format, include/slowburn/.clang-format).
FORMAT_SRCS = $(shell find user tools tests bench -name '*.cpp' -o -name '*.h' | grep -v "^tests/fixtures") \
              $(wildcard bpf/*.c bpf/*.h include/slowburn/*.h)
format:
	clang-format -i $(FORMAT_SRCS)

# Fails (and lists the files) when anything is not formatted: what CI can run.
# One clang-format for every file (--dry-run -Werror: a violation is an
# error naming its file): 1.6 s, where a clang-format and a cmp per file
# took 52 s of `make test` on this 2-core machine.
format-check:
	$(Q)out=$$(clang-format --dry-run -Werror $(FORMAT_SRCS) 2>&1); rc=$$?; \
	bad=$$(printf '%s\n' "$$out" | sed -n 's/^\([^ :]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/  \1/p' | sort -u); \
	if [ -n "$$bad" ]; then echo "not formatted (run make format):"; echo "$$bad"; exit 1; fi; \
	if [ $$rc -ne 0 ]; then printf '%s\n' "$$out" | tail -5; echo "clang-format failed (above; make deps installs it)"; exit 1; fi

clean:
	rm -rf $(BUILD)

$(BUILD)/bpf $(BUILD)/skel:
	$(Q)mkdir -p $@

-include $(shell find $(BUILD)/obj $(BUILD)/fuzz/obj -name '*.d' 2>/dev/null)
