#include "host/tcp_paths.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "stats/robust.h"

namespace slowburn {

namespace {

bool loopback(const std::string& endpoint) { return endpoint.starts_with("127.") || endpoint.starts_with("[::1]"); }

// One name for both ends of a connection: its two endpoints in order, and
// the namespace where it never left the host.
using ConnectionKey = std::tuple<std::string, std::string, uint64_t>;

ConnectionKey key_of(const TcpEnd& e) {
  uint64_t netns = loopback(e.local) || loopback(e.remote) ? e.netns : 0;
  return e.local < e.remote ? ConnectionKey{e.local, e.remote, netns} : ConnectionKey{e.remote, e.local, netns};
}

std::string host_of(const std::string& endpoint) {
  size_t colon = endpoint.rfind(':');
  return colon == std::string::npos ? endpoint : endpoint.substr(0, colon);
}

}  // namespace

std::vector<TcpPathJudgement> judge_tcp_paths(const std::vector<std::vector<TcpEnd>>& ranks,
                                              const TcpPathThresholds& t) {
  // Each connection's round trip: the shortest of its fresh ends. A round
  // trip through the slow link is in both; an end's smoothed RTT also holds
  // what is its peer's alone: delayed ACKs (up to 40 ms where the peer
  // answers small messages late), its scheduling (a guest under TCG: 5 to
  // 13 ms on a healthy loopback connection).
  // (An RTT of 0: no sample yet.)
  std::map<ConnectionKey, uint32_t> rtt_us;
  std::map<ConnectionKey, std::set<size_t>> ranks_of;  // the ranks here with an end of it
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const TcpEnd& e : ranks[i]) {
      ranks_of[key_of(e)].insert(i);
      if (!e.fresh || e.rtt_us == 0) continue;
      auto [it, added] = rtt_us.emplace(key_of(e), e.rtt_us);
      if (!added) it->second = std::min(it->second, e.rtt_us);
    }
  struct Fastest {
    uint32_t us = UINT32_MAX;
    std::set<ConnectionKey> connections;
    std::set<std::string> remotes;
  };
  std::map<size_t, Fastest> fastest;  // by rank index: those with a connection
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const TcpEnd& e : ranks[i]) {
      auto it = rtt_us.find(key_of(e));
      if (it == rtt_us.end()) continue;
      Fastest& f = fastest[i];
      if (!f.connections.insert(it->first).second) continue;  // a socket pair within one rank counts once
      f.us = std::min(f.us, it->second);
      f.remotes.insert(host_of(e.remote));
    }
  std::vector<TcpPathJudgement> apart;
  if (fastest.size() < std::max<size_t>(t.min_ranks, 2)) return apart;
  for (const auto& [i, f] : fastest) {
    std::vector<double> others;
    for (const auto& [j, g] : fastest)
      if (j != i) others.push_back(g.us);
    double peers = median(others).value_or(0);  // others: at least one (2+ ranks)
    double us = f.us;
    if (us < t.versus_peers * peers || us - peers < t.min_excess_us) continue;
    // Told by a rank at the other end of one of its connections, here, that
    // has a fast connection elsewhere: the delay is this rank's, not that
    // peer's. A rank whose only peers are on other nodes, one of them slow,
    // has every connection slow too, and is that peer's victim.
    bool told = std::any_of(f.connections.begin(), f.connections.end(), [&](const ConnectionKey& k) {
      return std::any_of(ranks_of[k].begin(), ranks_of[k].end(), [&](size_t j) {
        auto other = fastest.find(j);
        return j != i && other != fastest.end() && t.versus_peers * other->second.us <= us;
      });
    });
    if (!told) continue;
    TcpPathJudgement j{i, f.us, f.connections.size(), peers, {}};
    for (const std::string& r : f.remotes)
      if (j.remotes.size() < 4) j.remotes.push_back(r);
    apart.push_back(std::move(j));
  }
  return apart;
}

}  // namespace slowburn
