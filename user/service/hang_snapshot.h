// What probe mode keeps when its hang rule names a rank: the job's stacks
// at that moment (stacks/stacks_session.h), one `stack` line per rank in
// the event log, so the morning after says where every rank sat (the
// frozen rank's frames, the collective the others waited in) without
// anyone having been there to run `slowburn stacks`.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/report.h"

namespace slowburn {

// For each job a hang finding names (once per job and finding batch): a
// snapshot of its ranks among `ranks`, each line handed to `log` (with
// `hang_of`: the named rank), and a one-line summary to `note`.
void snapshot_hung_jobs(const std::vector<Finding>& findings, const std::vector<RankIdentity>& ranks,
                        const std::function<void(nlohmann::json)>& log, const std::function<void(std::string)>& note);

}  // namespace slowburn
