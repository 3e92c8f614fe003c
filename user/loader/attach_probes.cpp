#include "loader/attach_probes.h"

#include <map>

#include "loader/attach_batch.h"
#include "probes/cookie.h"

namespace slowburn {

std::vector<UprobeSite> uprobe_sites(const ProbeResolution& r) {
  std::vector<UprobeSite> sites;
  uint64_t cookie = probe_cookie(*r.spec);
  for (const AttachSite& site : r.sites) sites.push_back({site.file_offset, cookie});
  return sites;
}

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
    std::vector<std::vector<UprobeSite>> member_sites;
    for (size_t i : members) member_sites.push_back(uprobe_sites(resolutions[i]));
    auto errors =
        attach_batch(member_sites, [&](std::span<const UprobeSite> sites) { return program.attach(path, pid, sites); });
    for (size_t k = 0; k < members.size(); ++k) {
      if (!errors[k]) continue;
      statuses[members[k]].state = ProbeState::failed;
      statuses[members[k]].detail = errors[k]->message;
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
