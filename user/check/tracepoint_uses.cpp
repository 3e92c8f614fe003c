#include "check/tracepoint_uses.h"

#include <string_view>

#include "health/health_snapshot.h"
#include "slowburn/hwevents.h"
#include "sources/kernel_sources.h"

namespace slowburn {

namespace {

constexpr const char* kTracingKernel =
    "a kernel built with CONFIG_TRACEPOINTS and CONFIG_FTRACE (every distribution kernel is)";

std::vector<TracepointUse> build() {
  const std::string sched_without =
      "host.sched: a rank's time off the CPU and who ran on its CPU instead are not measured, so a straggler is "
      "never explained as descheduled (raw_tp in bpf/sched.bpf.c)";
  std::vector<TracepointUse> uses = {
      {"sched", "sched_switch", "host.sched (trace, probe)", "a kernel without scheduler tracepoints", sched_without,
       kTracingKernel},
      {"sched", "sched_wakeup", "host.sched (trace, probe)", "a kernel without scheduler tracepoints", sched_without,
       kTracingKernel},
      {"sched", "sched_wakeup_new", "host.sched (trace, probe)", "a kernel without scheduler tracepoints",
       sched_without, kTracingKernel},
      {"printk", "console", "nvidia.xid from the kernel log (drivers before 575)", "a kernel without printk tracing",
       "Xids of NVIDIA drivers before 575 are not seen as they happen (slowburn health still reads them from "
       "/dev/kmsg)",
       kTracingKernel},
      {"irq", "irq_handler_entry", "slowburn gpuirq", "a kernel without IRQ tracepoints",
       "slowburn gpuirq has no interrupt rate or handler latency", kTracingKernel},
      {"irq", "irq_handler_exit", "slowburn gpuirq", "a kernel without IRQ tracepoints",
       "slowburn gpuirq has no handler latency", kTracingKernel},
  };
  // The hardware monitor's raw-record sources: their reasons are its own.
  for (const KernelSource& source : all_kernel_sources(true, true, true)) {
    TracepointUse use{source.system,  source.event, std::string(source.name) + " (hardware monitor)",
                      source.missing, "",           ""};
    switch (source.id) {
      case SB_TP_AER_EVENT:
        use.without =
            "PCIe AER errors are not seen as they happen (slowburn aer --once and health still read the sysfs "
            "counters)";
        use.fix = "a kernel with CONFIG_PCIEAER=y";
        break;
      case SB_TP_PCIE_LINK_EVENT:
      case SB_TP_PCI_HP_EVENT:
        use.without = "link retrains and hotplug are seen by polling sysfs link attributes, once a second";
        use.fix = "Linux 7.0 or later (nothing to do before: the sysfs poller covers it)";
        break;
      case SB_TP_NVIDIA_DEV_XID:
        use.without = "Xids are read from the kernel log instead (printk:console), which drivers before 575 need";
        use.fix = "NVIDIA driver 575 or later, loaded (on a GPU node)";
        break;
      default:
        break;
    }
    uses.push_back(std::move(use));
  }
  auto split = [](std::string_view full) {
    size_t colon = full.find(':');
    return std::pair{std::string(full.substr(0, colon)), std::string(full.substr(colon + 1))};
  };
  auto [mce_system, mce_event] = split(kMceTracepoint);
  uses.push_back({mce_system, mce_event, "slowburn health memory.mce_tracepoint", kMceTracepointMissing,
                  "machine checks are seen only in the kernel log (health memory.mce_log)",
                  "an x86 kernel with CONFIG_X86_MCE=y"});
  auto [mc_system, mc_event] = split(kMcEventTracepoint);
  uses.push_back({mc_system, mc_event, "slowburn health memory.mc_event_tracepoint", kMcEventTracepointMissing,
                  "memory-controller error events are seen only as EDAC counters in sysfs",
                  "a kernel with CONFIG_RAS=y and an EDAC driver for this memory controller"});
  return uses;
}

}  // namespace

const std::vector<TracepointUse>& tracepoint_uses() {
  static const std::vector<TracepointUse> uses = build();
  return uses;
}

}  // namespace slowburn
