#include "loader/gpuirq_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "loader/bpf_maps.h"
#include "loader/features.h"
#include "slowburn/hwevents.h"

// After slowburn/hwevents.h: the skeleton refers to its types.
#include "gpuirq.skel.h"

namespace slowburn {

Result<std::unique_ptr<GpuIrqProgram>> GpuIrqProgram::load_and_attach(const GpuIrqOptions& options) {
  if (options.name_prefix.empty() || options.name_prefix.size() >= SB_IRQ_NAME_BYTES)
    return make_error("IRQ name prefix '{}' must be 1 to {} characters", options.name_prefix, SB_IRQ_NAME_BYTES - 1);
  const KernelFeatures& kernel = KernelFeatures::host();
  if (!kernel.tracefs) return make_error("nvidia.irq unavailable: {}", kernel.tracefs_missing);
  if (!kernel.has_tracepoint("irq", "irq_handler_entry"))
    return make_error("nvidia.irq unavailable: no irq:irq_handler_entry tracepoint");
  auto opened = Skeleton<gpuirq_bpf>::open("the GPU interrupt program (bpf/gpuirq.bpf.c)");
  if (!opened) return opened.error();
  std::unique_ptr<GpuIrqProgram> program(new GpuIrqProgram(std::move(*opened)));
  auto& skel = program->skel_;
  std::memset(const_cast<char*>(skel->rodata->irq_name_prefix), 0, SB_IRQ_NAME_BYTES);
  std::memcpy(const_cast<char*>(skel->rodata->irq_name_prefix), options.name_prefix.data(), options.name_prefix.size());
  skel->rodata->irq_name_prefix_len = static_cast<uint32_t>(options.name_prefix.size());

  program->isr_symbol_ = options.isr_symbol;
  program->kprobe_unavailable_ = isr_kprobes_unavailable(
      kernel, options.kprobes, [&] { return kallsyms_has(options.isr_symbol, options.proc_root); }, options.isr_symbol);
  bool kprobes = !program->kprobe_unavailable_;
  bpf_program__set_autoload(skel->progs.nvidia_isr_enter, kprobes);
  bpf_program__set_autoload(skel->progs.nvidia_isr_exit, kprobes);
  if (auto loaded = skel.load(); !loaded) return loaded.error();

  bpf_program* programs[] = {skel->progs.irq_enter, skel->progs.irq_exit, skel->progs.nvidia_isr_enter,
                             skel->progs.nvidia_isr_exit};
  for (bpf_program* prog : programs) {
    if (!bpf_program__autoload(prog)) continue;
    bool kprobe = prog == skel->progs.nvidia_isr_enter || prog == skel->progs.nvidia_isr_exit;
    // The kprobe pair attaches to options.isr_symbol, not the section's nvidia_isr.
    bpf_link* link =
        kprobe ? bpf_program__attach_kprobe(prog, prog == skel->progs.nvidia_isr_exit, options.isr_symbol.c_str())
               : bpf_program__attach(prog);
    if (!link)
      return make_sys_error(errno, fmt::format("cannot attach {}{}", bpf_program__name(prog),
                                               kprobe ? " to " + options.isr_symbol : std::string()));
    program->skel_.links().add(link);
  }
  return program;
}

GpuIrqProgram::GpuIrqProgram(Skeleton<gpuirq_bpf> skel) : skel_(std::move(skel)) {}

GpuIrqProgram::~GpuIrqProgram() = default;

std::optional<std::string> isr_kprobes_unavailable(const KernelFeatures& kernel, bool requested,
                                                   const std::function<bool()>& driver_has_isr,
                                                   const std::string& isr_symbol) {
  if (!requested) return "not requested";
  if (kernel.kprobes_missing) return kernel.kprobes_missing;
  if (!driver_has_isr())
    return fmt::format(
        "{} not in /proc/kallsyms ({})", isr_symbol,
        isr_symbol.starts_with("nvidia") ? "driver not loaded" : "not a function of this kernel or a loaded module");
  return std::nullopt;
}

std::vector<IrqHistogram> GpuIrqProgram::histograms() const {
  auto sum = [this](const sb_irq_key& key, const std::vector<sb_irq_hist>& values) {
    IrqHistogram h;
    h.irq = key.irq;
    h.source = key.source ? "kprobe:" + isr_symbol_ : "irq-tracepoint";
    for (const sb_irq_hist& cpu : values) {
      for (size_t slot = 0; slot < SB_IRQ_HIST_SLOTS; ++slot) h.hist.add_slot_count(slot, cpu.slots[slot]);
      h.total_ns += cpu.total_ns;
      if (h.name.empty() && cpu.name[0]) h.name = std::string(cpu.name, strnlen(cpu.name, sizeof(cpu.name)));
    }
    if (key.source) h.name = isr_symbol_;  // the BPF side names every kprobe record nvidia_isr
    return h;
  };
  return sum_percpu_map<sb_irq_key, sb_irq_hist>(bpf_map__fd(skel_->maps.irq_hists), sum);
}

}  // namespace slowburn
