#include "loader/attach_batch.h"

namespace slowburn {

std::vector<std::optional<Error>> attach_batch(const std::vector<std::vector<UprobeSite>>& member_sites,
                                               const std::function<Result<void>(std::span<const UprobeSite>)>& attach) {
  std::vector<std::optional<Error>> errors(member_sites.size());
  std::vector<UprobeSite> all;
  for (const auto& sites : member_sites) all.insert(all.end(), sites.begin(), sites.end());
  if (all.empty() || attach(all)) return errors;
  for (size_t i = 0; i < member_sites.size(); ++i)
    if (auto ok = attach(member_sites[i]); !ok) errors[i] = ok.error();
  return errors;
}

}  // namespace slowburn
