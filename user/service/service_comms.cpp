#include "service/service_comms.h"

#include "probes/catalog.h"

namespace slowburn {

ServiceComms::ServiceComms(const std::filesystem::path& proc_root)
    : registry_(CommRegistry::for_processes(proc_root)) {}

void ServiceComms::name_new(CollaggProgram& program, uint64_t now_ns) {
  for (const CollaggProgram::NewComm& seen : program.take_new_comms()) {
    const ProbeSpec* spec = find_probe(static_cast<uint16_t>(seen.probe_id));
    if (spec) named_.try_emplace({seen.pid, seen.handle}, Named{spec->backend, 0});
  }
  for (auto& [key, named] : named_) {
    CommunicatorRef comm = registry_.lookup(key.first, named.backend, key.second, now_ns);
    // The job-wide communicator is slot 0 already.
    if (!comm || comm->source == CommSource::job || comm->id == named.slot) continue;
    if (program.set_comm_slot(key.first, key.second, comm->id)) {
      slots_[comm->id] = comm;
      named.slot = comm->id;
    }
  }
}

void ServiceComms::remove_rank(int32_t pid) {
  registry_.remove_rank(pid);
  std::erase_if(named_, [pid](const auto& kv) { return kv.first.first == pid; });
}

CommunicatorRef ServiceComms::slot(uint32_t slot) const {
  auto it = slots_.find(slot);
  return it == slots_.end() ? nullptr : it->second;
}

}  // namespace slowburn
