// Two costs of the NCCL IB side, each measured within one run:
//
//   ib_cost poll IB_POLL_LOOP ROUNDS CALLS
//     per-hit cost of the nccl.ib.test probe pair (NCCL's polling loop, the
//     not-done path) against an empty uprobe pair on the same function,
//     configurations alternating;
//   ib_cost qp QP_LOOP ROUNDS CALLS
//     per-round cost of the verbs data path probes (a post_send uprobe and
//     a poll_cq uprobe pair: stamp, match, sum per QP) against empty uprobe
//     pairs on both functions, for a round that posts and completes one
//     send and for an empty poll; configurations alternating;
//   ib_cost symbols LIBNCCL ROUNDS
//     resolving the four nccl.ib.* and the public nccl.* probes in
//     libnccl.so.2: parsing the ELF (file in the page cache, then right after
//     dropping the page cache) and through a warm SymbolCache.
#include <bpf/libbpf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "bench/bench_util.h"
#include "core/subprocess.h"
#include "loader/ncclib_program.h"
#include "loader/verbs_program.h"
#include "probes/catalog.h"
#include "probes/resolver.h"
#include "symbols/elf_symbols.h"

using namespace slowburn;
using namespace slowburn::bench;
using namespace std::chrono_literals;

namespace {

int poll_cost(const std::string& binary, int rounds, long calls) {
  SymbolCache cache;
  ProbeResolution test = resolve_in_file(*find_probe("nccl.ib.test"), binary, cache);
  if (!test.resolved) {
    std::fprintf(stderr, "nccl.ib.test does not resolve in %s: %s\n", binary.c_str(), test.reason.c_str());
    return 1;
  }
  uint64_t offset = test.sites[0].file_offset;
  std::vector<std::string> names = {"no probe", "empty uprobe pair", "nccl.ib.test probe pair"};
  std::map<std::string, std::vector<double>> samples;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < names.size(); ++k) {
      const std::string& name = names[(k + static_cast<size_t>(round)) % names.size()];
      std::shared_ptr<void> attached;
      if (name == "empty uprobe pair") {
        attached = attach_empty(binary, offset);
        if (!attached) return std::fprintf(stderr, "empty pair did not attach\n"), 1;
      } else if (name == "nccl.ib.test probe pair") {
        // Perf links, as the empty pair: the same attachment, only the programs differ.
        auto program = NcclIbProgram::load(AttachMode::perf_link);
        if (!program) return std::fprintf(stderr, "%s\n", program.error().message.c_str()), 1;
        if (auto ok = (*program)->attach(test, -1); !ok)
          return std::fprintf(stderr, "%s\n", ok.error().message.c_str()), 1;
        attached = std::shared_ptr<NcclIbProgram>(std::move(*program));
      }
      samples[name].push_back(run_loop(binary, calls));
    }
  }
  double none = median(samples["no probe"]);
  double empty = median(samples["empty uprobe pair"]) - none;
  std::printf("| configuration | ns per call (median of %d) | added by the probe, ns | vs empty pair |\n", rounds);
  std::printf("|---|---|---|---|\n");
  for (const std::string& name : names) {
    double m = median(samples[name]);
    std::printf("| %s | %.0f | %.0f | %s |\n", name.c_str(), m, m - none,
                name == "no probe" ? "-" : fmt::format("{:.2f}x", (m - none) / empty).c_str());
  }
  return 0;
}

// Runs `qp_loop CALLS [empty]`; -1 on failure.
double run_qp_loop(const std::string& binary, long calls, bool empty) {
  std::string out = "/tmp/slowburn-bench-qp-loop.out";
  std::vector<std::string> argv = {binary, std::to_string(calls)};
  if (empty) argv.push_back("empty");
  auto child = Subprocess::spawn(argv, {out, {}});
  if (!child || child->wait_for(600s) != 0) return -1;
  double ns = -1;
  std::sscanf(read_text(out).c_str(), "ns_per_call %lf", &ns);
  return ns;
}

int qp_cost(const std::string& binary, int rounds, long calls) {
  SymbolCache cache;
  auto symbols = cache.get(binary);
  if (!symbols) return std::fprintf(stderr, "%s\n", symbols.error().message.c_str()), 1;
  auto offset_of = [&](const char* name) -> uint64_t {
    auto found = (*symbols)->lookup(name);
    return found.empty() ? 0 : found[0].file_offset;
  };
  uint64_t post = offset_of("bench_post_send"), poll = offset_of("bench_poll_cq");
  if (!post || !poll) return std::fprintf(stderr, "bench_post_send / bench_poll_cq not in %s\n", binary.c_str()), 1;
  std::vector<std::string> names = {"no probe", "empty uprobe pairs", "verbs data path probes"};
  for (bool empty : {false, true}) {
    std::map<std::string, std::vector<double>> samples;
    for (int round = 0; round < rounds; ++round) {
      for (size_t k = 0; k < names.size(); ++k) {
        const std::string& name = names[(k + static_cast<size_t>(round)) % names.size()];
        std::vector<std::shared_ptr<void>> attached;
        if (name == "empty uprobe pairs") {
          for (uint64_t offset : {post, poll}) {
            attached.push_back(attach_empty(binary, offset));
            if (!attached.back()) return std::fprintf(stderr, "empty pair did not attach\n"), 1;
          }
        } else if (name == "verbs data path probes") {
          auto program = VerbsProgram::load(AttachMode::perf_link);
          if (!program) return std::fprintf(stderr, "%s\n", program.error().message.c_str()), 1;
          if (auto ok = (*program)->attach_data_path(binary, -1, post, poll); !ok)
            return std::fprintf(stderr, "%s\n", ok.error().message.c_str()), 1;
          auto shared = std::shared_ptr<VerbsProgram>(std::move(*program));
          samples[name].push_back(run_qp_loop(binary, calls, empty));
          // The full path was measured only if the completions were matched and timed.
          uint64_t timed = shared->counters().completions;
          if (!empty && timed < static_cast<uint64_t>(calls) * 9 / 10)
            return std::fprintf(stderr, "only %llu of %ld completions timed: not the full path\n",
                                static_cast<unsigned long long>(timed), calls),
                   1;
          continue;
        }
        samples[name].push_back(run_qp_loop(binary, calls, empty));
      }
    }
    double none = median(samples["no probe"]);
    double base = median(samples["empty uprobe pairs"]) - none;
    std::printf(
        "\n%s, median of %d:\n\n",
        empty ? "An empty poll (poll_cq returns nothing)" : "A round: post one signaled send, poll its completion",
        rounds);
    std::printf("| configuration | ns per round | added, ns | vs empty pairs |\n|---|---|---|---|\n");
    for (const std::string& name : names) {
      double m = median(samples[name]);
      std::printf("| %s | %.0f | %.0f | %s |\n", name.c_str(), m, m - none,
                  name == "no probe" ? "-" : fmt::format("{:.2f}x", (m - none) / base).c_str());
    }
  }
  return 0;
}

int symbol_cost(const std::string& library, int rounds) {
  auto probes = select_probes({"nccl.*"}, ProbeProgram::nccl_ib);
  auto public_api = select_probes({"nccl.*"});
  if (!probes || !public_api) return 1;
  std::vector<const ProbeSpec*> all = *probes;
  all.insert(all.end(), public_api->begin(), public_api->end());
  auto resolve_all = [&](SymbolCache& cache) {
    auto start = std::chrono::steady_clock::now();
    for (const ProbeSpec* spec : all)
      if (!resolve_in_file(*spec, library, cache).resolved) std::fprintf(stderr, "%s unresolved\n", spec->name.c_str());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  bool can_drop = std::ofstream("/proc/sys/vm/drop_caches").good();
  std::vector<double> parsed, dropped, cached;
  SymbolCache warm;
  resolve_all(warm);
  for (int i = 0; i < rounds; ++i) {
    SymbolCache fresh;
    parsed.push_back(resolve_all(fresh));
    cached.push_back(resolve_all(warm));
    if (can_drop) {
      std::ofstream("/proc/sys/vm/drop_caches") << "1\n";
      SymbolCache cold;
      dropped.push_back(resolve_all(cold));
    }
  }
  std::printf("%zu probes (nccl.ib.* and the public nccl.* API) resolved in %s, median of %d:\n\n", all.size(),
              library.c_str(), rounds);
  std::printf("| symbol tables | ms |\n|---|---|\n");
  if (can_drop) std::printf("| parsed, page cache dropped first | %.2f |\n", median(dropped));
  std::printf("| parsed, file in the page cache | %.2f |\n", median(parsed));
  std::printf("| cached (SymbolCache: stat + build id, lookups) | %.3f |\n", median(cached));
  std::printf("\nparsed / cached: %.0fx\n", median(parsed) / median(cached));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  libbpf_set_print(nullptr);
  if (argc == 5 && std::string(argv[1]) == "poll") return poll_cost(argv[2], std::atoi(argv[3]), std::atol(argv[4]));
  if (argc == 5 && std::string(argv[1]) == "qp") return qp_cost(argv[2], std::atoi(argv[3]), std::atol(argv[4]));
  if (argc == 4 && std::string(argv[1]) == "symbols") return symbol_cost(argv[2], std::atoi(argv[3]));
  std::fprintf(stderr, "usage: %s poll IB_POLL_LOOP ROUNDS CALLS | qp QP_LOOP ROUNDS CALLS | symbols LIBNCCL ROUNDS\n",
               argv[0]);
  return 2;
}
