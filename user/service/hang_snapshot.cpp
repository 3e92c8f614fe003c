#include "service/hang_snapshot.h"

#include <fmt/format.h>

#include <set>

#include "stacks/stacks_session.h"

namespace slowburn {

void snapshot_hung_jobs(const std::vector<Finding>& findings, const std::vector<RankIdentity>& ranks,
                        const std::function<void(nlohmann::json)>& log, const std::function<void(std::string)>& note) {
  std::set<std::string> done;
  for (const Finding& f : findings) {
    if (f.type != "hang" || !done.insert(f.culprit.job).second) continue;
    std::vector<RankIdentity> job;
    for (const RankIdentity& r : ranks)
      if (r.job == f.culprit.job) job.push_back(r);
    if (job.empty()) continue;
    // Two quick samples: enough to see who holds still, short enough for
    // the service's loop (each rank is held for milliseconds).
    StacksOptions options;
    options.samples = 2;
    options.interval_s = 0.2;
    StacksSnapshot s = take_stacks(job, options);
    std::string where;
    for (nlohmann::json line : stack_lines(s)) {
      if (line["rank"] == f.culprit.rank)
        where = line["symbol"].is_string() ? "inside " + line["symbol"].get<std::string>() : "outside any collective";
      line["hang_of"] = f.culprit.rank;
      log(std::move(line));
    }
    note(fmt::format("stacks of job {} at the hang: {} rank(s) in {} group(s); rank {} {}{}", f.culprit.job,
                     s.ranks.size(), s.groups.size(), f.culprit.rank, where.empty() ? "(no stack)" : "sits " + where,
                     s.stuck.empty() ? "" : "; " + s.stuck.front().summary));
  }
}

}  // namespace slowburn
