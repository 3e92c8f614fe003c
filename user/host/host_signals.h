// What the host does to a rank, as read: the kernel's sums of its time off
// the CPU (bpf/sched.bpf.c), and the procfs and cgroup files that count its
// faults, switches, throttling and pressure. Plain values; differences of
// two readings are what the judge looks at (host/host_causes.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stats/log2_hist.h"

namespace slowburn {

// enum sb_offcpu_reason, in order.
enum class OffCpuReason { runnable, io, fault, futex, sleep };
constexpr size_t kOffCpuReasons = 5;
// "waiting for a CPU", "blocked on I/O", "in page faults", "in futex waits", "asleep".
const char* off_cpu_words(OffCpuReason reason);

// One process's sums since the kernel started following it.
struct SchedSums {
  uint64_t oncpu_ns = 0;
  std::array<uint64_t, kOffCpuReasons> offcpu_ns{};
  uint64_t involuntary_switches = 0;
  uint64_t voluntary_switches = 0;
  uint64_t runq_waits = 0;
  Log2Histogram runq_ns{"nsecs", 32};

  uint64_t off(OffCpuReason r) const { return offcpu_ns[static_cast<size_t>(r)]; }
  // this - earlier, field by field (a counter that went back reads as 0).
  SchedSums minus(const SchedSums& earlier) const;
};

// Time another process held a CPU while a traced one waited for it.
struct CpuShare {
  int32_t pid = 0;        // the traced process
  int32_t other_pid = 0;  // who ran
  uint32_t cpu = 0;
  uint64_t ns = 0;
  std::string comm;  // the other process's thread name
};

// /proc/PID/stat, the fields we use.
struct ProcStat {
  std::string comm;
  uint64_t minflt = 0;
  uint64_t majflt = 0;
  int processor = -1;  // the CPU it last ran on
};

// /proc/PID/status, the fields we use.
struct ProcStatus {
  uint64_t voluntary_ctxt_switches = 0;
  uint64_t nonvoluntary_ctxt_switches = 0;
  std::set<int> cpus_allowed;
  std::optional<uint64_t> vm_swap_kb;
};

// Where a process sits in each hierarchy (/proc/PID/cgroup).
struct CgroupMembership {
  std::optional<std::string> unified;     // cgroup v2 path ("0::/...")
  std::map<std::string, std::string> v1;  // controller ("cpu", "memory") -> path
};

enum class CgroupVersion { v1, v2 };

// cpu.stat of a CPU cgroup: v1 (nr_periods, nr_throttled, throttled_time in
// ns) or v2 (nr_periods, nr_throttled, throttled_usec).
struct CpuStat {
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  uint64_t throttled_ns = 0;
};

// A CFS bandwidth limit: quota per period (v1 cpu.cfs_quota_us and
// cpu.cfs_period_us, v2 cpu.max).
struct CpuQuota {
  std::optional<uint64_t> quota_us;  // none: unlimited
  uint64_t period_us = 100000;
  std::optional<double> cpus() const {
    return quota_us ? std::optional<double>(static_cast<double>(*quota_us) / static_cast<double>(period_us))
                    : std::nullopt;
  }
};

// A PSI file (cpu.pressure, memory.pressure, io.pressure): the "some" and
// "full" lines' avg10 and total (us).
struct Pressure {
  double some_avg10 = 0;
  uint64_t some_total_us = 0;
  std::optional<uint64_t> full_total_us;
};

// The cgroup files of one process, each where the node has it.
struct CgroupReading {
  CgroupVersion version = CgroupVersion::v2;
  std::string cpu_path;  // "/slowburn/job1" as /proc/PID/cgroup names it
  std::optional<CpuStat> cpu_stat;
  std::optional<CpuQuota> quota;
  std::map<std::string, uint64_t> memory_events;  // v2 memory.events; v1: oom_kill, failcnt
  std::optional<Pressure> cpu_pressure, memory_pressure, io_pressure;
};

// One socket's counts over its life (net/tcp_diag.h).
struct TcpCounts {
  uint32_t retrans = 0;  // segments retransmitted
  uint64_t bytes_sent = 0;
  uint64_t bytes_retrans = 0;
  uint64_t bytes_acked = 0;
  // Its path, for the connections judge (host/tcp_paths.h): its smoothed
  // RTT now, its ends, and whether it is established.
  uint32_t rtt_us = 0;
  std::string local{};
  std::string remote{};
  bool established = false;
};

// A process's TCP sockets at one reading, by inode (one that closed
// leaves, one that opened counts from 0), and their highest smoothed RTT.
// Empty where the process has no TCP socket; unset where its sockets or
// its fds could not be read.
struct TcpReading {
  std::map<uint64_t, TcpCounts> by_inode;
  uint32_t max_rtt_us = 0;
  uint64_t netns = 0;  // its network namespace's inode (0: unknown): loopback ends meet only within one
};

// One process, one reading.
struct HostReading {
  uint64_t ts_ns = 0;  // CLOCK_MONOTONIC
  std::optional<ProcStat> stat;
  std::optional<ProcStatus> status;
  std::optional<CgroupReading> cgroup;
  std::optional<SchedSums> sched;
  std::optional<TcpReading> tcp;  // where the node answers sock_diag
};

}  // namespace slowburn
