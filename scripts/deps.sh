#!/usr/bin/env bash
# Install the Debian 12 packages slowburn needs, only those missing, and the
# Node packages its MCP acceptance test needs (tests only: the official MCP
# client), into BUILD/node from tests/mcp/package-lock.json.
# Idempotent: a machine that has them all runs no apt-get and no npm at all.
# Usage: scripts/deps.sh [BUILD]   (default: build)
set -euo pipefail
build_dir=${1:-build}

packages=(
	make g++ clang llvm pkg-config            # toolchain (llvm: llvm-strip)
	libbpf-dev bpftool libelf-dev zlib1g-dev  # BPF: loader, skeletons
	libdw-dev                                 # slowburn stacks: unwinding through .eh_frame (elfutils' libdwfl)
	libcli11-dev libfmt-dev nlohmann-json3-dev # CLI, formatting, JSON
	libgtest-dev libgmock-dev libbenchmark-dev # tests, benchmarks
	openmpi-bin libopenmpi-dev                # demo workload, MPI probes, scenarios
	mpich libmpich-dev                        # tests: the MPICH family (mpirun.mpich; Open MPI keeps mpirun)
	libibverbs-dev ibverbs-providers          # verbs probes (the real libibverbs.so.1)
	iproute2 binutils                         # tests: veth in a network namespace; objcopy
	bpftrace                                  # bench baseline (the one-liner we replace)
	clang-format                              # make format
	help2man                                  # man pages from the commands' --help (make man, make install)
	lintian dpkg-dev                          # make deb: dpkg-shlibdeps for Depends; lintian checks the package (tests)
	python3-jsonschema                        # tests: real JSON lines validated against docs/schemas
	libclang-rt-14-dev                        # make fuzz: libFuzzer, ASan, UBSan runtimes
	libcpp-httplib-dev                        # the tests' HTTP client (scrapes of slowburn probe)
	python3-torch libgloo-dev                 # the PyTorch DDP workload (gloo); gloo headers check the offsets we read
	libpython3.11-dev                         # tests: CPython's headers check the frame offsets stacks read
	python3-mpi4py                            # tests: a Python MPI job (mpi4py on Open MPI)
	prometheus                                # tests: promtool and a real server scraping slowburn probe
	libsqlitecpp-dev libsqlite3-dev sqlite3   # recordings (trace --record, analyze); sqlite3 for queries
	faketime                                  # tests: a tracer on a skewed clock (a second node)
	graphviz                                  # tests: slowburn investigate --dot renders with dot
	qemu-system-x86 kmod                      # make test-kernels: Debian kernels under QEMU; modprobe/depmod for their modules
	ibverbs-utils perftest                    # make test-kernels: ibv_rc_pingpong, ib_send_bw for the Soft-RoCE faults
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = "installed" ] || missing+=("$p")
done
# Node and npm for the MCP acceptance test (tests/mcp/client.mjs): Debian's
# nodejs and npm unless a node with its own npm is installed already (a
# nodejs package that bundles npm conflicts with Debian's npm).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing packages need root: sudo apt-get install ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	# A fresh machine may have empty package lists: update once and retry.
	if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
		apt-get update
		apt-get install -y --no-install-recommends "${missing[@]}"
	fi
fi

# The MCP SDK at the exact versions of the committed lock file, into the
# build directory (never the source tree); again only when the lock changed.
node_dir="$build_dir/node"
lock=tests/mcp/package-lock.json
if ! cmp -s "$lock" "$node_dir/package-lock.json" ||
	[ ! -f "$node_dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
	echo "deps: npm ci --prefix $node_dir (tests/mcp/package.json: the MCP SDK for the acceptance test)"
	mkdir -p "$node_dir"
	cp tests/mcp/package.json "$lock" "$node_dir/"
	npm ci --prefix "$node_dir" --no-audit --no-fund --ignore-scripts --loglevel=error
fi
