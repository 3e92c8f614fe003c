#include "session/attach.h"

#include <map>

namespace slowburn {

namespace {
std::vector<UprobeSite> sites_of(const ProbeResolution& r) {
  std::vector<UprobeSite> sites;
  uint64_t cookie = make_callpair_cookie(r.spec->id, r.spec->size_arg, r.spec->aux_arg);
  for (const AttachSite& site : r.sites) sites.push_back({site.file_offset, cookie});
  return sites;
}
}  // namespace

std::vector<ProbeStatus> attach_probes(CallpairProgram& program, int32_t pid, const std::optional<RankIdentity>& rank,
                                       const std::vector<ProbeResolution>& resolutions) {
  std::vector<ProbeStatus> statuses;
  std::map<std::string, std::vector<size_t>> by_file;
  for (size_t i = 0; i < resolutions.size(); ++i) {
    const ProbeResolution& r = resolutions[i];
    ProbeStatus status{r.spec->name, rank, pid, ProbeState::unavailable, r.library, r.sites, r.reason};
    if (r.resolved) {
      status.state = ProbeState::attached;
      status.detail.clear();
      by_file[r.attach_path].push_back(i);
    }
    statuses.push_back(std::move(status));
  }
  for (const auto& [path, members] : by_file) {
    std::vector<UprobeSite> batch;
    for (size_t i : members) {
      auto sites = sites_of(resolutions[i]);
      batch.insert(batch.end(), sites.begin(), sites.end());
    }
    if (program.attach(path, pid, batch)) continue;
    for (size_t i : members) {
      auto ok = program.attach(path, pid, sites_of(resolutions[i]));
      if (ok) continue;
      statuses[i].state = ProbeState::failed;
      statuses[i].detail = ok.error().message;
    }
  }
  return statuses;
}

ProbeStatus attach_with_status(const ProbeResolution& r, int32_t pid, const std::optional<RankIdentity>& rank,
                               const std::function<Result<void>(const ProbeResolution&, int32_t)>& attach) {
  ProbeStatus status{r.spec->name, rank, pid > 0 ? pid : 0, ProbeState::unavailable, r.library, r.sites, r.reason};
  if (!r.resolved) return status;
  if (auto ok = attach(r, pid); !ok) {
    status.state = ProbeState::failed;
    status.detail = ok.error().message;
  } else {
    status.state = ProbeState::attached;
    status.detail.clear();
  }
  return status;
}

}  // namespace slowburn
