// A trace that saw no call complete for its first seconds, or reached no
// verdict and saw nobody hang: the job may have been stuck before slowburn
// attached (its ranks wait inside collectives
// whose entries were never traced, or one is stopped). Its ranks' stacks (stacks/stuck.h) say
// which rank holds the others: each becomes a hang finding of detector
// "stacks", so `trace` and `investigate` give an already-stuck job the
// verdict they give one that got stuck under them, instead of "undetermined".
#pragma once

#include <string>
#include <vector>

#include "core/rank_identity.h"
#include "detect/report.h"

namespace slowburn {

// Hang findings for the ranks a snapshot of `ranks` names; `notes` says
// what was looked at (the snapshot's groups) either way.
std::vector<Finding> stuck_before_attach(const std::vector<RankIdentity>& ranks, std::vector<std::string>& notes);

}  // namespace slowburn
