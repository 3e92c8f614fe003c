#include "engine/stuck_at_attach.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "stacks/stacks_session.h"

namespace slowburn {

std::vector<Finding> stuck_before_attach(const std::vector<RankIdentity>& ranks, std::vector<std::string>& notes) {
  std::vector<Finding> found;
  StacksOptions options;
  options.samples = 3;
  options.interval_s = 0.3;
  StacksSnapshot s = take_stacks(ranks, options);
  std::vector<std::string> groups;
  for (const StackGroup& g : s.groups)
    groups.push_back(fmt::format("{} rank(s) {}, {}", g.ranks.size(), g.state, g.where));
  notes.push_back(fmt::format("the ranks' stacks ({} samples) show {}", options.samples,
                              groups.empty() ? "nothing" : fmt::format("{}", fmt::join(groups, "; "))));
  for (const StuckFinding& stuck : s.stuck) {
    Finding f;
    f.type = "hang";
    f.detector = "stacks";
    for (const RankIdentity& r : ranks)
      if (r.pid == stuck.pid) f.culprit = r;
    f.probe = collective_probe_of(stuck.waiting_in);  // the collective most of the others wait in
    f.waiting_ranks = stuck.waiting_ranks;
    f.summary = stuck.summary + " (stuck before slowburn attached: from the ranks' stacks)";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace slowburn
