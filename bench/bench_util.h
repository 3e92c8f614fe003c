// What the probe-cost benchmarks share: running a target loop, reading its
// output, medians, and an empty uprobe pair as the baseline.
#pragma once

#include <bpf/libbpf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/subprocess.h"
#include "empty_pair.skel.h"

namespace slowburn::bench {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Runs `binary CALLS`, which prints "ns_per_call X"; -1 on failure.
inline double run_loop(const std::string& binary, long calls) {
  std::string out = "/tmp/slowburn-bench-loop.out";
  auto child = Subprocess::spawn({binary, std::to_string(calls)}, {out, {}});
  if (!child || !child->wait_for(std::chrono::seconds(600))) return -1;
  double ns = -1;
  std::sscanf(read_text(out).c_str(), "ns_per_call %lf", &ns);
  return ns;
}

// bpf/empty_pair.bpf.c on one function: the cost of the uprobe trap alone.
struct EmptyPair {
  empty_pair_bpf* skel = nullptr;
  std::vector<bpf_link*> links;
  ~EmptyPair() {
    for (bpf_link* l : links) bpf_link__destroy(l);
    empty_pair_bpf::destroy(skel);
  }
};

inline std::shared_ptr<EmptyPair> attach_empty(const std::string& binary, uint64_t offset) {
  auto e = std::make_shared<EmptyPair>();
  e->skel = empty_pair_bpf::open_and_load();
  if (!e->skel) return nullptr;
  for (int ret = 0; ret < 2; ++ret) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret == 1);
    bpf_link* link = bpf_program__attach_uprobe_opts(ret ? e->skel->progs.empty_exit : e->skel->progs.empty_enter, -1,
                                                     binary.c_str(), offset, &opts);
    if (!link) return nullptr;
    e->links.push_back(link);
  }
  return e;
}

}  // namespace slowburn::bench
