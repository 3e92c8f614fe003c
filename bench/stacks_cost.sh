#!/usr/bin/env bash
# What a `slowburn stacks` snapshot costs (bench/RESULTS.md 20b): an 8-rank
# Open MPI job (busy ranks) and a 4-rank PyTorch DDP job on gloo; for each,
# one sample three times and the default snapshot (3 samples 0.5 s apart)
# once: wall time, peak RSS of slowburn, and how long each rank was held
# under ptrace per read. Root; after make. Usage: bench/stacks_cost.sh
set -uo pipefail
cd "$(dirname "$0")/.."
sb=build/slowburn

measure() { # label, args...
	local label=$1
	shift
	local out
	out=$( { /usr/bin/time -f '%e %M' "$sb" stacks --json "$@" >/tmp/stacks_cost.$$ ; } 2>&1 | tail -1)
	local held
	held=$(python3 -c "
import json
for l in open('/tmp/stacks_cost.$$'):
    j = json.loads(l)
    if j['kind'] == 'summary': print('%.1f' % j['ptrace_held_ms_per_read'], j['ranks'])
")
	read -r wall rss <<<"$out"
	echo "$label: wall ${wall} s, peak RSS $((rss / 1024)) MiB, held ${held% *} ms a read, ${held#* } ranks"
	rm -f /tmp/stacks_cost.$$
}

(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 8 build/libexec/slowburn-mpi-workload \
	--compute-us 3000 --seconds 60 >/dev/null 2>&1 &)
sleep 5
pids=$(pgrep -f "^build/libexec/slowburn-mpi-workload --compute-us" | sed 's/^/-p /')
for i in 1 2 3; do measure "MPI 8 ranks, 1 sample" --samples 1 $pids; done
measure "MPI 8 ranks, default (3 samples 0.5 s apart)" $pids
pkill -9 -f "libexec/slowburn-mpi-workload --compute-us"
sleep 1

if [ -r /usr/lib/python3/dist-packages/torch/__init__.py ]; then
	for r in 0 1 2 3; do
		(MASTER_ADDR=127.0.0.1 MASTER_PORT=29690 RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 \
			/usr/bin/python3 build/libexec/slowburn-ddp-workload.py --seconds 60 >/dev/null 2>&1 &)
	done
	sleep 12
	pids=$(pgrep -f "slowburn-ddp-workload.py --seconds" | sed 's/^/-p /')
	for i in 1 2 3; do measure "DDP 4 ranks, 1 sample" --samples 1 $pids; done
	measure "DDP 4 ranks, default (3 samples 0.5 s apart)" $pids
	pkill -9 -f "slowburn-ddp-workload.py --seconds"
fi
