// GPU interrupt handler latency (bpf/gpuirq.bpf.c): irq tracepoints filtered
// by handler name in the kernel, and kprobes on the driver's ISR where the
// kernel has kprobes and the symbol.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "loader/features.h"
#include "loader/skeleton.h"
#include "stats/log2_hist.h"

struct gpuirq_bpf;
struct bpf_link;

namespace slowburn {

struct IrqHistogram {
  uint32_t irq = 0;
  std::string source;  // "irq-tracepoint" or "kprobe:<isr_symbol>" (kprobe:nvidia_isr)
  std::string name;    // the handler name the kernel reports
  Log2Histogram hist{"nsecs", 32};
  uint64_t total_ns = 0;
};

struct GpuIrqOptions {
  std::string name_prefix = "nvidia";  // handlers whose name starts with this
  bool kprobes = true;                 // also the ISR kprobes, where they can run
  // The kprobe pair's target: an interrupt handler irqreturn_t f(int irq, void *)
  // like the driver's nvidia_isr (another one, e.g. vring_interrupt, tests the
  // kprobe path on a kernel without the NVIDIA driver).
  std::string isr_symbol = "nvidia_isr";
  std::string sysfs_root = "/sys";  // where kprobe support is looked up
  std::string proc_root = "/proc";  // where kallsyms is read
};

// Why the driver ISR kprobes will not run (nullopt: they will): not
// requested, a kernel without kprobes, or no isr_symbol (nvidia_isr) to probe.
std::optional<std::string> isr_kprobes_unavailable(const KernelFeatures& kernel, bool requested,
                                                   const std::function<bool()>& driver_has_isr,
                                                   const std::string& isr_symbol = "nvidia_isr");

class GpuIrqProgram {
 public:
  static Result<std::unique_ptr<GpuIrqProgram>> load_and_attach(const GpuIrqOptions& options);
  ~GpuIrqProgram();
  GpuIrqProgram(const GpuIrqProgram&) = delete;
  GpuIrqProgram& operator=(const GpuIrqProgram&) = delete;

  std::vector<IrqHistogram> histograms() const;
  // Why the ISR kprobes are not running, when they are not.
  const std::optional<std::string>& kprobe_unavailable() const { return kprobe_unavailable_; }

 private:
  explicit GpuIrqProgram(Skeleton<gpuirq_bpf> skel);
  Skeleton<gpuirq_bpf> skel_;
  std::string isr_symbol_;
  std::optional<std::string> kprobe_unavailable_;
};

}  // namespace slowburn
