#!/usr/bin/env bash
# How often `slowburn stacks` reads a gloo rank's communicator right
# (bench/RESULTS.md 20a): N PyTorch DDP jobs (4 ranks on gloo; every other
# one with tensor-parallel pairs {0,1} {2,3} too), rank 2 stopped after a
# random 8-14 s, one snapshot each; prints every rank's collective and
# communicator and the finding. Root; Debian's python3-torch; after make.
# Usage: bench/stacks_gloo_comms.sh [jobs]
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-6}
workload=build/libexec/slowburn-ddp-workload.py
# The line of the workload's pair all-reduce (dist.all_reduce(..., group=my_group)).
pair_line=$(grep -n 'group=my_group)' "$workload" | cut -d: -f1)
for i in $(seq 1 "$jobs"); do
	groups=$((i % 2 ? 0 : 2))
	for r in 0 1 2 3; do
		# In a subshell: not this script's job, so no "Killed" line when it goes.
		(MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29700 + i)) RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 \
			/usr/bin/python3 $workload --seconds 60 --group-size $groups >/dev/null 2>&1 &)
	done
	sleep $((8 + RANDOM % 7))
	stopped=""
	for p in $(pgrep -f "$workload --seconds"); do grep -qz '^RANK=2$' /proc/$p/environ && stopped=$p; done
	if [ -z "$stopped" ]; then
		echo "job $i: rank 2 not found (the job did not start)"
		pkill -9 -f "$workload --seconds"
		continue
	fi
	kill -STOP "$stopped"
	sleep 1
	# Which group's work a rank's gloo worker runs, from where its Python
	# waits: the pair all-reduce (workload line $pair_line), else a world one
	# (the step's flag, or DDP's gradients during backward()).
	build/slowburn stacks --json 2>/dev/null | python3 -c "
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if j['kind'] == 'stack':
        at = [f['line'] for f in (j['python'] or []) if f['function'] == 'main' and f['file'].endswith('ddp-workload.py')]
        name = (j['communicator'] or {}).get('name')
        want = None if not j['collective'] else ('a gloo group of 2' if at and at[0] == $pair_line else 'gloo world')
        mark = '-' if name is None else ('right' if name.startswith(want or '?') else 'WRONG')
        print('job $i pairs=$groups rank', j['rank'], j['collective'], name, 'python line', at[0] if at else None, mark)
    elif j['kind'] == 'finding':
        print('job $i pairs=$groups finding rank', j['rank'], j['evidence']['why'])
"
	pkill -9 -f "$workload --seconds"
	sleep 1
done
