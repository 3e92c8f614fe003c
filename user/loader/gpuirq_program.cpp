#include "loader/gpuirq_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "loader/bpf_maps.h"
#include "loader/features.h"
#include "slowburn/hwevents.h"
#include "tracefs/tracefs.h"

// After slowburn/hwevents.h: the skeleton refers to its types.
#include "gpuirq.skel.h"

namespace slowburn {

Result<std::unique_ptr<GpuIrqProgram>> GpuIrqProgram::load_and_attach(const GpuIrqOptions& options) {
  if (options.name_prefix.empty() || options.name_prefix.size() >= SB_IRQ_NAME_BYTES)
    return make_error("IRQ name prefix '{}' must be 1 to {} characters", options.name_prefix, SB_IRQ_NAME_BYTES - 1);
  auto tracefs = ensure_tracefs();
  if (!tracefs) return tracefs.error();
  if (!tracepoint_exists(*tracefs, "irq", "irq_handler_entry"))
    return make_error("nvidia.irq unavailable: no irq:irq_handler_entry tracepoint");
  gpuirq_bpf* skel = gpuirq_bpf::open();
  if (!skel) return make_sys_error(errno, "cannot open the GPU interrupt program (bpf/gpuirq.bpf.c)");
  std::unique_ptr<GpuIrqProgram> program(new GpuIrqProgram(skel));
  std::memset(const_cast<char*>(skel->rodata->irq_name_prefix), 0, SB_IRQ_NAME_BYTES);
  std::memcpy(const_cast<char*>(skel->rodata->irq_name_prefix), options.name_prefix.data(), options.name_prefix.size());
  skel->rodata->irq_name_prefix_len = static_cast<uint32_t>(options.name_prefix.size());

  if (!options.kprobes)
    program->kprobe_unavailable_ = "not requested";
  else if (auto why = kprobes_unavailable_reason())
    program->kprobe_unavailable_ = *why;
  else if (!kallsyms_has("nvidia_isr"))
    program->kprobe_unavailable_ = "nvidia_isr not in /proc/kallsyms (driver not loaded)";
  bool kprobes = !program->kprobe_unavailable_;
  bpf_program__set_autoload(skel->progs.nvidia_isr_enter, kprobes);
  bpf_program__set_autoload(skel->progs.nvidia_isr_exit, kprobes);
  if (int err = gpuirq_bpf::load(skel); err) return make_sys_error(-err, "cannot load the GPU interrupt program");

  bpf_program* programs[] = {skel->progs.irq_enter, skel->progs.irq_exit, skel->progs.nvidia_isr_enter,
                             skel->progs.nvidia_isr_exit};
  for (bpf_program* prog : programs) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* link = bpf_program__attach(prog);
    if (!link) return make_sys_error(errno, fmt::format("cannot attach {}", bpf_program__name(prog)));
    program->links_.push_back(link);
  }
  return program;
}

GpuIrqProgram::~GpuIrqProgram() {
  for (bpf_link* link : links_) bpf_link__destroy(link);
  gpuirq_bpf::destroy(skel_);
}

std::vector<IrqHistogram> GpuIrqProgram::histograms() const {
  std::vector<IrqHistogram> result;
  int fd = bpf_map__fd(skel_->maps.irq_hists);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return result;
  std::vector<sb_irq_hist> values(static_cast<size_t>(cpus));
  for (const sb_irq_key& key : map_keys<sb_irq_key>(fd)) {
    if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
    IrqHistogram h;
    h.irq = key.irq;
    h.source = key.source ? "kprobe:nvidia_isr" : "irq-tracepoint";
    for (const sb_irq_hist& cpu : values) {
      for (size_t slot = 0; slot < SB_IRQ_HIST_SLOTS; ++slot) h.hist.add_slot_count(slot, cpu.slots[slot]);
      h.total_ns += cpu.total_ns;
      if (h.name.empty() && cpu.name[0]) h.name = std::string(cpu.name, strnlen(cpu.name, sizeof(cpu.name)));
    }
    result.push_back(std::move(h));
  }
  return result;
}

}  // namespace slowburn
