#include "comm/comm_registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "comm/gloo_context.h"
#include "comm/mpi_library.h"
#include "core/strings.h"
#include "probes/resolver.h"

namespace slowburn {

namespace {

constexpr size_t kListedMembers = 16;  // keys list up to this many members, then a hash
constexpr int kNcclInProgress = 7;     // ncclInProgress: a nonblocking init under way, the handle is valid
constexpr int kNcclSplitNoColor = -1;  // NCCL_SPLIT_NOCOLOR

uint64_t fnv1a(const std::vector<int>& values) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (int v : values) {
    hash ^= static_cast<uint32_t>(v);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string members_text(const std::vector<int>& members) {
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() <= kListedMembers) {
    std::vector<std::string> parts;
    for (int r : sorted) parts.push_back(std::to_string(r));
    return join(parts, ",");
  }
  return fmt::format("{}..{} ({} ranks, {:016x})", sorted.front(), sorted.back(), sorted.size(), fnv1a(sorted));
}

}  // namespace

CommRegistry::CommRegistry(MemoryOpener open_memory, MpiLocator locate_mpi, GlooLocator locate_gloo)
    : open_memory_(std::move(open_memory)), locate_mpi_(std::move(locate_mpi)), locate_gloo_(std::move(locate_gloo)) {}

CommRegistry CommRegistry::for_processes(const std::filesystem::path& proc_root) {
  return CommRegistry([proc_root](int32_t pid) { return open_process_memory(proc_root, pid); },
                      [proc_root](int32_t pid) { return locate_mpi(proc_root, pid); },
                      [proc_root](int32_t pid) { return locate_gloo_vtables(proc_root, pid); });
}

void CommRegistry::add_rank(const RankIdentity& rank) {
  Process& p = processes_[rank.pid];
  p.identity = rank;
}

void CommRegistry::remove_rank(int32_t pid) {
  gloo_.remove_pid(pid);
  processes_.erase(pid);
  std::erase_if(next_seq_, [pid](const auto& kv) { return std::get<0>(kv.first) == pid; });
}

CommRegistry::Process* CommRegistry::process(int32_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

std::shared_ptr<CommunicatorInfo> CommRegistry::communicator(const std::string& key) {
  auto& slot = comms_[key];
  if (!slot) {
    slot = std::make_shared<CommunicatorInfo>();
    slot->id = next_id_++;
    slot->key = key;
  }
  return slot;
}

std::shared_ptr<CommunicatorInfo> CommRegistry::job_wide(const std::string& job) {
  auto comm = communicator("job:" + job);
  if (comm->label.empty()) {
    comm->label = "all ranks";
    comm->source = CommSource::job;
  }
  return comm;
}

void CommRegistry::note_once(const std::string& key, std::string text) {
  if (noted_.insert(key).second) notes_.push_back(std::move(text));
}

std::vector<std::string> CommRegistry::take_notes() { return std::exchange(notes_, {}); }

std::vector<CommunicatorRef> CommRegistry::communicators() const {
  std::vector<CommunicatorRef> all;
  for (const auto& [key, comm] : comms_) all.push_back(comm);
  std::sort(all.begin(), all.end(), [](const CommunicatorRef& a, const CommunicatorRef& b) { return a->id < b->id; });
  return all;
}

const MpiLibrary& CommRegistry::mpi_library(Process& p) {
  if (!p.mpi) p.mpi = locate_mpi_(p.identity.pid);
  return *p.mpi;
}

uint64_t CommRegistry::mpi_handle(Process& p, uint64_t raw) {
  return mpi_library(p).family == MpiFamily::mpich ? raw & 0xffffffffu : raw;
}

void CommRegistry::ensure_mpi_layout(Process& p) {
  if (p.layout_tried) return;
  p.layout_tried = true;
  if (!p.memory) p.memory = open_memory_(p.identity.pid);
  const MpiLibrary& lib = mpi_library(p);
  std::string why;
  if (lib.family == MpiFamily::mpich) {
    p.world = kMpichCommWorld;  // fixed by the MPICH ABI
    if (!p.identity.world_size) {
      why = "its world size is not in its environment";
    } else {
      auto layout = discover_mpich_layout(*p.memory, lib.mpich_data, p.identity.rank, *p.identity.world_size);
      if (layout) {
        p.mpich = *layout;
        return;
      }
      why = layout.error().message;
    }
  } else if (lib.ompi_worlds.empty()) {
    why = lib.family == MpiFamily::unknown
              ? "its MPI library is neither Open MPI nor of the MPICH family (no ompi_mpi_comm_world, no MPIR_*)"
              : "no ompi_mpi_comm_world in its executable or libmpi";
  } else if (!p.identity.world_size) {
    why = "its world size is not in its environment";
  } else {
    for (uint64_t world : lib.ompi_worlds) {
      auto layout = discover_ompi_layout(*p.memory, world, p.identity.rank, *p.identity.world_size);
      if (layout) {
        p.ompi = *layout;
        p.world = world;
        return;
      }
      why = layout.error().message;
    }
    p.world = lib.ompi_worlds.front();
  }
  note_once("mpi-layout:" + p.identity.job,
            fmt::format("{}: MPI communicators cannot be read from memory ({}): communicators made before slowburn "
                        "attached are aligned across all ranks by exit time; new ones are named by their creation",
                        rank_label(p.identity), why));
}

Result<MpiComm> CommRegistry::read_mpi(Process& p, uint64_t handle) {
  ensure_mpi_layout(p);
  if (p.ompi) return read_ompi_comm(*p.memory, *p.ompi, handle);
  if (p.mpich)
    return read_mpich_comm(*p.memory, *p.mpich, static_cast<uint32_t>(handle), p.identity.rank,
                           p.identity.world_size.value_or(0));
  return make_error("no layout");
}

CommRegistry::Binding CommRegistry::from_memory(Process& p, const MpiComm& comm) {
  std::string key = fmt::format("mpi:{}:cid={}:ranks={}", p.identity.job, comm.cid, members_text(comm.members));
  auto info = communicator(key);
  if (info->label.empty()) {
    bool world = comm.cid == 0;
    info->backend = CommBackend::mpi;
    info->source = CommSource::memory;
    info->size = static_cast<int>(comm.members.size());
    info->members = comm.members;
    info->label = world ? "MPI_COMM_WORLD" : fmt::format("cid {} (ranks {})", comm.cid, members_text(comm.members));
    std::set<int> wanted(comm.members.begin(), comm.members.end());
    std::set<int32_t> local;
    for (const auto& [pid, proc] : processes_)
      if (proc.identity.job == p.identity.job && wanted.contains(proc.identity.rank)) local.insert(pid);
    info->local_pids = local;
  }
  Binding b;
  b.comm = info;
  b.comm_rank = comm.my_rank;
  return b;
}

CommRegistry::Binding CommRegistry::resolve_mpi(Process& p, uint64_t handle) {
  ensure_mpi_layout(p);
  if (p.ompi || p.mpich) {
    auto comm = read_mpi(p, handle);
    if (comm) {
      ++counters_.resolved_memory;
      return from_memory(p, *comm);
    }
    note_once(fmt::format("ompi-read:{}:{:x}", p.identity.pid, handle),
              fmt::format("{}: {}; its calls are aligned across all ranks by exit time", rank_label(p.identity),
                          comm.error().message));
  } else if (p.world && handle == *p.world) {
    auto info = communicator(fmt::format("mpi:{}:world", p.identity.job));
    if (info->label.empty()) {
      info->backend = CommBackend::mpi;
      info->source = CommSource::creation;
      info->label = "MPI_COMM_WORLD";
      info->size = p.identity.world_size;
      std::set<int32_t> local;
      for (const auto& [pid, proc] : processes_)
        if (proc.identity.job == p.identity.job) local.insert(pid);
      info->local_pids = local;
    }
    ++counters_.resolved_creation;
    return {info, p.identity.rank, false, std::nullopt};
  }
  ++counters_.unresolved;
  return {job_wide(p.identity.job), std::nullopt, false, std::nullopt};
}

CommRegistry::Binding CommRegistry::resolve_gloo(Process& p, uint64_t context, uint64_t now_ns) {
  if (!p.memory) p.memory = open_memory_(p.identity.pid);
  auto read = read_gloo_context(*p.memory, context);
  if (!read) {
    note_once(fmt::format("gloo-read:{}", p.identity.pid),
              fmt::format("{}: a gloo context could not be read ({:#x}): its calls are aligned across all ranks",
                          rank_label(p.identity), context));
    ++counters_.unresolved;
    return {job_wide(p.identity.job), std::nullopt, false, std::nullopt};
  }
  size_t stream = gloo_.add_stream({p.identity.pid, context, read->rank, read->size});
  gloo_class_since_.try_emplace({p.identity.job, read->size}, now_ns);
  Binding b;
  b.comm_rank = read->rank;
  b.seq_from_creation = true;  // PyTorch's tag counts the group's collectives from its creation
  b.gloo_stream = stream;
  refresh_gloo(p, b, now_ns);
  return b;
}

bool CommRegistry::gloo_class_settled(const Process& p, int size, uint64_t now_ns) {
  if (gloo_settled_.contains({p.identity.job, size})) return true;
  auto since = gloo_class_since_.find({p.identity.job, size});
  if (since != gloo_class_since_.end() && now_ns >= since->second + kGlooSettleNs) {
    gloo_settled_.insert({p.identity.job, size});
    return true;
  }
  // Sooner when every process of the job here has a context of this size.
  for (const auto& [pid, other] : processes_) {
    if (other.identity.job != p.identity.job) continue;
    bool has = std::any_of(other.handles.begin(), other.handles.end(), [&](const auto& kv) {
      return kv.second.gloo_stream && gloo_.stream(*kv.second.gloo_stream).size == size;
    });
    if (!has) return false;
  }
  gloo_settled_.insert({p.identity.job, size});
  return true;
}

// A gloo stream's communicator: its process group once the grouping of its
// size is known, the size class until then.
void CommRegistry::refresh_gloo(Process& p, Binding& b, uint64_t now_ns) {
  if (b.comm && b.gloo_generation == gloo_.generation() && b.comm->source == CommSource::inferred && b.comm->local_pids)
    return;
  const GlooGroups::Stream& s = gloo_.stream(*b.gloo_stream);
  // Contexts still arriving (processes start one by one): no grouping yet.
  auto group = gloo_class_settled(p, s.size, now_ns) ? gloo_.group_of(*b.gloo_stream) : std::nullopt;
  if (group) b.gloo_generation = gloo_.generation();
  if (!group) {
    auto info = communicator(fmt::format("gloo:{}:size={}", p.identity.job, s.size));
    if (info->label.empty()) {
      info->backend = CommBackend::gloo;
      info->source = CommSource::inferred;
      info->size = s.size;
      info->seq_from_creation = true;
      info->label = fmt::format("gloo groups of {} (not yet told apart)", s.size);
      info->provisional = true;
    }
    b.comm = info;
    return;
  }
  std::vector<int> ranks;
  std::set<int32_t> pids;
  for (size_t member : *group) {
    const GlooGroups::Stream& m = gloo_.stream(member);
    pids.insert(m.pid);
    if (Process* mp = process(m.pid)) ranks.push_back(mp->identity.rank);
  }
  std::string listed = members_text(ranks);
  auto info = communicator(fmt::format("gloo:{}:size={}:ranks={}", p.identity.job, s.size, listed));
  if (info->label.empty()) {
    info->backend = CommBackend::gloo;
    info->source = CommSource::inferred;
    info->size = s.size;
    info->seq_from_creation = true;
    info->local_pids = pids;
    info->label = static_cast<int>(ranks.size()) == s.size && p.identity.world_size == s.size
                      ? "gloo world"
                      : fmt::format("gloo group of {} (ranks {}{})", s.size, listed,
                                    static_cast<int>(ranks.size()) < s.size ? " here" : "");
    if (s.size != p.identity.world_size.value_or(-1))
      note_once("gloo-group:" + info->key,
                fmt::format("gloo process group of {} told apart: ranks {}", s.size, listed));
  }
  b.comm = info;
}

CommRegistry::Binding& CommRegistry::bind(Process& p, CommBackend backend, uint64_t handle, uint64_t now_ns) {
  if (backend == CommBackend::mpi) handle = mpi_handle(p, handle);
  auto [it, fresh] = p.handles.try_emplace({backend, handle});
  if (!fresh) return it->second;
  switch (backend) {
    case CommBackend::mpi:
      it->second = resolve_mpi(p, handle);
      break;
    case CommBackend::gloo:
      it->second = resolve_gloo(p, handle, now_ns);
      break;
    case CommBackend::nccl:
      note_once(fmt::format("nccl-unknown:{}", p.identity.job),
                fmt::format("{}: an NCCL communicator made before slowburn attached: its calls are histogrammed, "
                            "not aligned (NCCL returns at enqueue: only the sequence on a communicator whose "
                            "creation was traced lines its calls up)",
                            rank_label(p.identity)));
      ++counters_.unresolved;
      it->second = {job_wide(p.identity.job), std::nullopt, false, std::nullopt};
      break;
    case CommBackend::none:
      it->second = {job_wide(p.identity.job), std::nullopt, false, std::nullopt};
      break;
  }
  return it->second;
}

CommunicatorRef CommRegistry::lookup(int32_t pid, CommBackend backend, uint64_t handle, uint64_t now_ns) {
  Process* p = process(pid);
  if (!p) return nullptr;
  if (backend == CommBackend::none || handle == 0) return job_wide(p->identity.job);
  Binding& b = bind(*p, backend, handle, now_ns);
  if (b.gloo_stream) refresh_gloo(*p, b, now_ns);  // told apart since, without a call to say so
  return b.comm;
}

CallComm CommRegistry::classify(const CallEvent& call, const ProbeSpec& spec) {
  Process* p = process(static_cast<int32_t>(call.pid));
  CallComm out;
  if (!p) return out;
  Binding* b = nullptr;
  if (spec.backend == CommBackend::none || call.comm == 0) {
    out.comm = job_wide(p->identity.job);
  } else {
    b = &bind(*p, spec.backend, call.comm, call.exit_ns);
    if (b->gloo_stream) {
      if (spec.kind == CallKind::synchronizing && call.comm_seq)
        gloo_.observe(*b->gloo_stream, *call.comm_seq, call.entry_ns, call.exit_ns);
      // A grouping told apart (by this call or another process's) reaches
      // each binding on its next call.
      refresh_gloo(*p, *b, call.exit_ns);
    }
    out.comm = b->comm;
    out.comm_rank = b->comm_rank;
  }
  if (b && b->gloo_stream && call.comm_seq) {
    out.seq = *call.comm_seq;
    out.seq_absolute = true;
  } else {
    out.seq = next_seq_[{p->identity.pid, out.comm->id, call.probe_id}]++;
    out.seq_absolute = b && b->seq_from_creation;
  }
  return out;
}

void CommRegistry::on_lifecycle(const CallEvent& call, const ProbeSpec& spec) {
  Process* p = process(static_cast<int32_t>(call.pid));
  if (!p) return;
  switch (spec.comm_event) {
    case CommEventKind::mpi_split:
    case CommEventKind::mpi_split_type:
    case CommEventKind::mpi_dup:
    case CommEventKind::mpi_create:
      on_mpi_creation(*p, call, spec);
      break;
    case CommEventKind::mpi_free:
      if (p->handles.erase({CommBackend::mpi, mpi_handle(*p, call.comm)})) ++counters_.freed;
      break;
    case CommEventKind::nccl_init:
    case CommEventKind::nccl_split:
    case CommEventKind::nccl_init_all:
      on_nccl_creation(*p, call, spec);
      break;
    case CommEventKind::nccl_destroy:
      if (p->handles.erase({CommBackend::nccl, call.comm})) ++counters_.freed;
      break;
    case CommEventKind::none:
      break;
  }
}

void CommRegistry::on_mpi_creation(Process& p, const CallEvent& call, const ProbeSpec& spec) {
  if (call.ret != 0 || !call.out_value || *call.out_value == 0) return;  // failed, or MPI_COMM_NULL not written
  uint64_t handle = mpi_handle(p, *call.out_value);
  const Binding& parent = bind(p, CommBackend::mpi, call.comm);
  Binding made;
  auto read = read_mpi(p, handle);
  if (read) {
    made = from_memory(p, *read);
    ++counters_.resolved_memory;
  } else if (p.ompi || (p.mpich && !is_mpich_comm_handle(static_cast<uint32_t>(handle)))) {
    return;  // MPI_COMM_NULL (a color of MPI_UNDEFINED) reads as no group: nothing to name
  } else {
    // Every member creates communicators on the parent in the same order:
    // (parent, its k-th creation, color) is the same on each of them.
    int order = p.creations_on[parent.comm->key]++;
    int color = static_cast<int>(static_cast<int32_t>(call.aux_arg));
    std::string how = spec.comm_event == CommEventKind::mpi_dup      ? "dup"
                      : spec.comm_event == CommEventKind::mpi_create ? "create"
                                                                     : fmt::format("split:color={}", color);
    auto info = communicator(fmt::format("{}/{}#{}", parent.comm->key, how, order));
    if (info->label.empty()) {
      info->backend = CommBackend::mpi;
      info->source = CommSource::creation;
      info->label = fmt::format("{} of {} #{}", how, parent.comm->label, order);
    }
    made.comm = info;
    ++counters_.resolved_creation;
  }
  made.seq_from_creation = true;
  p.handles[{CommBackend::mpi, handle}] = made;
  next_seq_.erase(next_seq_.lower_bound({p.identity.pid, made.comm->id, 0}),
                  next_seq_.upper_bound({p.identity.pid, made.comm->id, UINT32_MAX}));
}

void CommRegistry::on_nccl_creation(Process& p, const CallEvent& call, const ProbeSpec& spec) {
  if ((call.ret != 0 && call.ret != kNcclInProgress) || !call.out_value || *call.out_value == 0) return;
  uint64_t handle = *call.out_value;
  Binding made;
  made.seq_from_creation = true;
  if (spec.comm_event == CommEventKind::nccl_init) {
    if (!call.key_hash) return;
    int nranks = static_cast<int>(static_cast<int32_t>(call.size_arg));
    auto info = communicator(fmt::format("nccl:{}:id={:016x}", p.identity.job, *call.key_hash));
    if (info->label.empty()) {
      info->backend = CommBackend::nccl;
      info->source = CommSource::creation;
      info->size = nranks;
      info->label = fmt::format("nccl {:08x} ({} ranks)", *call.key_hash >> 32, nranks);
    }
    made.comm = info;
    made.comm_rank = static_cast<int>(static_cast<int32_t>(call.aux_arg));
  } else if (spec.comm_event == CommEventKind::nccl_split) {
    int color = static_cast<int>(static_cast<int32_t>(call.aux_arg));
    if (color == kNcclSplitNoColor) return;
    const Binding& parent = bind(p, CommBackend::nccl, call.comm);
    int order = p.creations_on[parent.comm->key]++;
    auto info = communicator(fmt::format("{}/split:color={}#{}", parent.comm->key, color, order));
    if (info->label.empty()) {
      info->backend = CommBackend::nccl;
      info->source = CommSource::creation;
      info->label = fmt::format("split {} of {}", color, parent.comm->label);
    }
    made.comm = info;
  } else {
    // ncclCommInitAll: one process drives every rank; nothing to align across processes.
    auto info = communicator(fmt::format("nccl:{}:initall:pid={}", p.identity.job, p.identity.pid));
    if (info->label.empty()) {
      info->backend = CommBackend::nccl;
      info->source = CommSource::creation;
      info->size = static_cast<int>(static_cast<int32_t>(call.size_arg));
      info->label = fmt::format("ncclCommInitAll of pid {}", p.identity.pid);
      info->local_pids = std::set<int32_t>{p.identity.pid};
    }
    made.comm = info;
  }
  ++counters_.resolved_creation;
  p.handles[{CommBackend::nccl, handle}] = made;
  next_seq_.erase(next_seq_.lower_bound({p.identity.pid, made.comm->id, 0}),
                  next_seq_.upper_bound({p.identity.pid, made.comm->id, UINT32_MAX}));
}

}  // namespace slowburn
