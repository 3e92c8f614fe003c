#!/usr/bin/env bash
# The probe service's costs (make bench runs this after run.sh's sections):
#   8. the job's slowdown under `slowburn probe`, budget off and on, against no
#      service at all, alternating in one run;
#   9. the service's own CPU per second, idle and under a job;
#  10. a soak: repeated jobs under one service, RSS at start and end, and the
#      calls it counted against the steps the jobs report.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-5}
steps=${SERVICE_STEPS:-1500}
idle_seconds=${IDLE_SECONDS:-30}
soak_seconds=${SOAK_SECONDS:-600}
slowburn=$build/slowburn
workload=$build/libexec/slowburn-mpi-workload
port=${PORT:-9499}
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

metric() { # NAME: the first sample of an unlabelled metric, 0 when absent
	curl -s "127.0.0.1:$port/metrics" | awk -v n="$1" '$1 == n {print $2; exit}' | grep . || echo 0
}
start_service() { # ARGS...: runs slowburn probe, waits for its endpoint
	"$slowburn" probe --listen "127.0.0.1:$port" --no-hardware "$@" >>"$tmp/service.out" 2>&1 &
	service=$!
	for _ in $(seq 100); do curl -sf "127.0.0.1:$port/metrics" >/dev/null && return 0; sleep 0.1; done
	echo "bench: slowburn probe did not start:" >&2
	cat "$tmp/service.out" >&2
	exit 1
}
stop_service() { kill -TERM "$service"; wait "$service" || true; }
run_job() { # prints the job's wall seconds
	local s e
	s=$(date +%s.%N)
	"${mpirun[@]}" "$workload" --compute-us 3000 --steps "$steps" >/dev/null 2>&1
	e=$(date +%s.%N)
	echo "$e - $s" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "### 8. The job's slowdown under \`slowburn probe\`, and the calls it traps"
echo
echo "The demo workload, 4 ranks on $(nproc) CPUs, $steps steps of 3 ms compute + MPI_Allgather +"
echo "MPI_Allreduce (~1250 calls/s in all); no service, then the service trapping every call"
echo "(\`--overhead-budget 0 --no-sampling\`), with sampling alone (\`--overhead-budget 0\`), and as"
echo "it runs by default (sampling and the 1% budget), alternating, $rounds rounds; seconds per job, the"
echo "calls the probes trapped per second of the job (\`slowburn_probe_hits_total\`), and the service's own"
echo "CPU seconds per second while the job ran:"
echo
configs=("--overhead-budget 0 --no-sampling" "--overhead-budget 0" "")
names=("service, every call trapped" "service, sampling, no budget" "service, default (sampling, budget 1%)")
declare -a t_none
declare -A t_cfg c_cfg h_cfg
hits() { curl -s "127.0.0.1:$port/metrics" | awk '/^slowburn_probe_hits_total/ {s += $2} END {print s + 0}'; }
for r in $(seq "$rounds"); do
	t_none+=("$(run_job)")
	for i in "${!configs[@]}"; do
		# shellcheck disable=SC2086 # the configuration's words are separate arguments
		start_service ${configs[$i]}
		cpu0=$(metric process_cpu_seconds_total)
		h0=$(hits)
		t=$(run_job)
		cpu1=$(metric process_cpu_seconds_total)
		h1=$(hits)
		stop_service
		t_cfg[$i]+="$t "
		c_cfg[$i]+="$(echo "($cpu1 - $cpu0) / $t" | bc -l) "
		h_cfg[$i]+="$(echo "($h1 - $h0) / $t" | bc -l) "
	done
done
m_none=$(printf '%s\n' "${t_none[@]}" | median)
printf '| configuration | median job s | vs no service | calls trapped /s | service CPU s/s |\n|---|---|---|---|---|\n'
printf '| no service | %.2f | 1.000x | - | - |\n' "$m_none"
for i in "${!configs[@]}"; do
	m=$(printf '%s\n' ${t_cfg[$i]} | median)
	printf '| %s | %.2f | %.3fx | %.0f | %.4f |\n' "${names[$i]}" "$m" "$(echo "$m / $m_none" | bc -l)" \
		"$(printf '%s\n' ${h_cfg[$i]} | median)" "$(printf '%s\n' ${c_cfg[$i]} | median)"
done
echo
echo "All rounds: none ${t_none[*]}; $(for i in "${!configs[@]}"; do printf '/ %s: %s' "${names[$i]}" "${t_cfg[$i]}"; done)"
echo

echo "### 8b. Time to a finding under the budget"
echo
echo "Rank 2 of 4 computes 1.8x (a 2.4 ms stall a step); the service already running, the job started;"
echo "seconds from the job's start to the service's first \`finding\` line naming rank 2, with the"
echo "budget off and at its default, alternating, $rounds rounds (60 s at most each):"
echo
declare -a f_off f_on
time_to_finding() { # ARGS...: service arguments; prints seconds, or "none"
	rm -rf "$tmp/flog"
	start_service --log-dir "$tmp/flog" "$@"
	local s
	s=$(date +%s.%N)
	"${mpirun[@]}" "$workload" --compute-us 3000 --slow-rank 2 --slowdown 1.8 --seconds 70 >/dev/null 2>&1 &
	local job=$! found=none
	for _ in $(seq 600); do
		if grep -q '"kind":"finding".*"rank":2' "$tmp/flog/slowburn.jsonl" 2>/dev/null; then
			found=$(echo "$(date +%s.%N) - $s" | bc -l)
			break
		fi
		sleep 0.1
	done
	kill "$job" 2>/dev/null || true
	pkill -f slowburn-mpi-workload 2>/dev/null || true
	wait "$job" 2>/dev/null || true
	stop_service
	echo "$found"
}
for r in $(seq "$rounds"); do
	f_off+=("$(time_to_finding --overhead-budget 0 --no-sampling)")
	f_on+=("$(time_to_finding)")
done
printf '| configuration | median s to the finding | all rounds |\n|---|---|---|\n'
printf '| every call trapped, no budget | %s | %s |\n' "$(printf '%s\n' "${f_off[@]}" | median)" "${f_off[*]}"
printf '| default (sampling, budget 1%%) | %s | %s |\n' "$(printf '%s\n' "${f_on[@]}" | median)" "${f_on[*]}"
echo

echo "### 9. The service's own CPU, idle"
echo
start_service
sleep 2
cpu0=$(metric process_cpu_seconds_total)
sleep "$idle_seconds"
cpu1=$(metric process_cpu_seconds_total)
rss=$(metric process_resident_memory_bytes)
stop_service
echo "No job on the node, ${idle_seconds} s: $(echo "($cpu1 - $cpu0) / $idle_seconds" | bc -l | xargs printf '%.5f') CPU s/s"
echo "(rank discovery scans /proc every second); RSS $((${rss%.*} / 1048576)) MiB."
echo

[ "$soak_seconds" -gt 0 ] || exit 0
echo "### 10. Soak: ${soak_seconds} s of repeated jobs under one service"
echo
echo "One \`slowburn probe --log-dir --no-sampling\` (default budget), jobs of 4 ranks x 200 steps of 20 ms one after"
echo "another (\`--warmup-s 2\`: ranks wait after MPI_Init so discovery on its 1 s timer sees every call)."
echo
start_service --log-dir "$tmp/log" --no-sampling # exact counts need every call trapped
jobs_run=0
rss_start=""
end=$(($(date +%s) + soak_seconds))
while [ "$(date +%s)" -lt "$end" ]; do
	out=$("${mpirun[@]}" "$workload" --compute-us 20000 --steps 200 --warmup-s 2 2>/dev/null | grep 'workload done' || true)
	echo "$out" | grep -q 'done: 200 steps' || echo "bench: a job did not report 200 steps: $out" >&2
	jobs_run=$((jobs_run + 1))
	sleep 1.5 # the service notices the ranks' exit on its next interval
	[ -z "$rss_start" ] && rss_start=$(metric process_resident_memory_bytes)
done
rss_end=$(metric process_resident_memory_bytes)
throttles=$(curl -s "127.0.0.1:$port/metrics" | awk '/^slowburn_probe_throttles_total/ {s += $2} END {print s + 0}')
stop_service
ends=$(grep -c '"kind":"rank","event":"end"\|"event":"end".*"kind":"rank"' "$tmp/log/slowburn.jsonl" || true)
exact=$(grep '"kind":"rank"' "$tmp/log/slowburn.jsonl" | grep '"event":"end"' |
	grep -c '"mpi.allgather":200,"mpi.allreduce":200' || true)
echo "- jobs: $jobs_run; rank exits logged: $ends (expected $((jobs_run * 4)))"
echo "- ranks whose counted calls match the job's (200 MPI_Allgather, 200 MPI_Allreduce): $exact of $ends"
echo "- budget throttles during the soak: $throttles"
echo "- RSS after the first job: $((${rss_start%.*} / 1024)) KiB; at the end: $((${rss_end%.*} / 1024)) KiB"
