#!/usr/bin/env bash
# How often `slowburn stacks` reads a stuck MPICH rank's communicator
# (bench/RESULTS.md 20a): N trials of the 2-D MPICH test job (4 ranks,
# tensor-parallel pairs {0,1} {2,3}, data-parallel pairs {0,2} {1,3}), rank
# 3 stopped, then 10 one-sample snapshots; prints each waiting rank's
# collective and communicator ("None": unread). Root; after make tests.
# Usage: bench/stacks_mpich_comms.sh [trials]
set -uo pipefail
cd "$(dirname "$0")/.."
w=build/tests/targets/mpich-workload
for t in $(seq 1 "${1:-8}"); do
	(mpirun.mpich -n 4 $w --compute-us 3000 --seconds 90 --tp 2 >/dev/null 2>&1 &)
	sleep 3
	r3=""
	for p in $(pgrep -f "$w"); do grep -qaz '^PMI_RANK=3$' /proc/$p/environ && r3=$p; done
	if [ -z "$r3" ]; then
		echo "trial $t: rank 3 not found (the job did not start)"
		pkill -9 -f "$w"
		continue
	fi
	kill -STOP "$r3"
	sleep 1.5
	for i in $(seq 1 10); do
		build/slowburn stacks --json --samples 1 2>/dev/null | python3 -c "
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if j['kind'] == 'stack' and j['rank'] in (0, 1, 2):
        print('trial $t rank', j['rank'], j['collective'], (j['communicator'] or {}).get('name'))
"
	done
	pkill -9 -f "$w"
	pkill -9 -f mpirun.mpich
	sleep 1
done
