#include "sources/kernel_sources.h"

#include "slowburn/hwevents.h"

namespace slowburn {

namespace {
constexpr KernelSource kAer{"pcie.aer", "ras", "aer_event", SB_TP_AER_EVENT,
                            "kernel built without CONFIG_PCIEAER (no ras:aer_event)"};
constexpr KernelSource kLinkEvent{"pcie.link_event", "pci", "pcie_link_event", SB_TP_PCIE_LINK_EVENT,
                                  "no pci:pcie_link_event tracepoint (Linux 7.0+)"};
constexpr KernelSource kHotplug{"pci.hotplug", "pci", "pci_hp_event", SB_TP_PCI_HP_EVENT,
                                "no pci:pci_hp_event tracepoint (Linux 7.0+)"};
constexpr KernelSource kDriverXid{"nvidia.xid", "nvidia", "nvidia_dev_xid", SB_TP_NVIDIA_DEV_XID,
                                  "no nvidia:nvidia_dev_xid tracepoint (driver < 575 or not loaded)"};
}  // namespace

std::vector<KernelSource> all_kernel_sources(bool aer, bool link, bool xid) {
  std::vector<KernelSource> wanted;
  if (aer) wanted.push_back(kAer);
  if (link) wanted.insert(wanted.end(), {kLinkEvent, kHotplug});
  if (xid) wanted.push_back(kDriverXid);
  return wanted;
}

std::vector<KernelSourcePlan> plan_kernel_sources(const KernelFeatures& kernel, bool aer, bool link, bool xid) {
  std::vector<KernelSourcePlan> plans;
  for (const KernelSource& source : all_kernel_sources(aer, link, xid)) {
    KernelSourcePlan plan{source, false, {}};
    if (!kernel.tracefs)
      plan.reason = kernel.tracefs_missing;
    else if (!kernel.has_tracepoint(source.system, source.event))
      plan.reason = source.missing;
    else
      plan.available = true;
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace slowburn
