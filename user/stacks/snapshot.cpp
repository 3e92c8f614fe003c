#include "stacks/snapshot.h"

#include <map>

#include "core/clock.h"
#include "probes/catalog.h"

namespace slowburn {

namespace {

// A C++ frame's function without its parameters: "gloo::allreduce".
std::string bare(const std::string& symbol) { return symbol.substr(0, symbol.find('(')); }

// A collective a rank waits inside: its probe and the name a user calls it
// by (MPI_Allreduce, where the library's symbol table may give its alias
// PMPI_Allreduce).
struct Collective {
  std::string probe;
  std::string name;
};

// Every collective's entry points, by bare name: the catalog's MPI, NCCL and
// gloo probes (not communicator lifecycle, not the IB transport or verbs).
const std::map<std::string, Collective>& collective_symbols() {
  static const std::map<std::string, Collective> symbols = [] {
    std::map<std::string, Collective> out;
    for (const ProbeSpec& spec : probe_catalog()) {
      if (spec.backend == CommBackend::none || spec.kind == CallKind::comm_lifecycle) continue;
      for (const ProbeTarget& target : spec.targets)
        for (const std::string& symbol : target.symbols)
          out.emplace(bare(symbol), Collective{spec.name, bare(target.symbols.front())});
    }
    return out;
  }();
  return symbols;
}

// Frames that mean "inside a collective" where the collective's own entry
// point leaves no frame: libgloo's exported gloo::allreduce(opts) tail-calls
// a hidden function, so a PyTorch rank's gloo worker shows only the work it
// runs (measured on Debian's python3-torch 1.13 and libgloo.so.0).
const std::map<std::string, Collective>& work_frames() {
  static const std::map<std::string, Collective> frames = {
      {"c10d::ProcessGroupGloo::AsyncWork::execute", {"gloo", "a gloo collective (ProcessGroupGloo work)"}},
  };
  return frames;
}

const Collective* collective_of(const std::string& symbol) {
  if (symbol.empty()) return nullptr;
  std::string name = bare(symbol);
  for (const auto* table : {&collective_symbols(), &work_frames()})
    if (auto it = table->find(name); it != table->end()) return &it->second;
  return nullptr;
}

}  // namespace

std::string collective_probe_of(const std::string& symbol) {
  const Collective* c = collective_of(symbol);
  return c ? c->probe : std::string();
}

void choose_thread(const ProcessStacks& stacks, RankSample& sample) {
  const ThreadStack* chosen = nullptr;
  size_t collective = 0;
  for (const ThreadStack& t : stacks.threads) {
    // The outermost collective frame: the call the program made (MPI_Allreduce),
    // not the library's inner calls.
    for (size_t i = t.frames.size(); i-- > 0;) {
      const Collective* c = collective_of(t.frames[i].symbol);
      if (!c) continue;
      if (!chosen || t.tid == stacks.pid) {
        chosen = &t;
        collective = i;
        sample.probe = c->probe;
        sample.symbol = c->name;
      }
      break;
    }
  }
  if (chosen) sample.comm_candidates = comm_candidates(*chosen, collective);
  if (!chosen)
    for (const ThreadStack& t : stacks.threads)
      if (t.tid == stacks.pid) chosen = &t;
  if (!chosen && !stacks.threads.empty()) chosen = &stacks.threads.front();
  if (!chosen) return;
  sample.tid = chosen->tid;
  sample.frames = chosen->frames;
  sample.unwind_error = chosen->error;
}

Result<RankSample> sample_rank(const RankIdentity& rank, const std::string& proc_root) {
  RankSample sample;
  auto process = read_process_sample(proc_root, rank.pid);
  if (!process) return process.error();
  sample.process = std::move(*process);
  sample.at_ns = monotonic_ns();
  auto stacks = unwind_process(rank.pid, 64, kStackCaptureBytes);
  if (!stacks) {
    sample.unwind_error = stacks.error().message;
    return sample;
  }
  sample.held_ns = stacks->held_ns;
  choose_thread(*stacks, sample);
  return sample;
}

}  // namespace slowburn
