// Per-call cost of the call-pair probe, against no probe, an empty uprobe
// pair and bpftrace's equivalent one-liner, in one run with the
// configurations alternating (so drift on a shared VM hits all alike).
//
//   probe_cost CALL_LOOP ROUNDS CALLS
#include <bpf/libbpf.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "bench/bench_util.h"
#include "core/subprocess.h"
#include "loader/callpair_program.h"
#include "loader/ring_buffer.h"
#include "probes/cookie.h"
#include "symbols/elf_symbols.h"

using namespace slowburn;
using namespace slowburn::bench;
using namespace std::chrono_literals;

namespace {

// Something attached while it lives.
using Setup = std::function<std::shared_ptr<void>()>;

struct Callpair {
  std::unique_ptr<CallpairProgram> program;
  std::unique_ptr<RingBufferReader> reader;
  std::atomic<bool> stop{false};
  std::thread consumer;
  uint64_t records = 0;
  ~Callpair() {
    stop = true;
    if (consumer.joinable()) consumer.join();
  }
};

// cookie: what the probe reads at entry (by default a size argument, as a
// plain function probe does; a catalog probe's cookie reads its communicator).
std::shared_ptr<void> attach_callpair(const std::string& binary, uint64_t offset, bool records, AttachMode mode,
                                      std::optional<uint64_t> cookie = std::nullopt) {
  auto c = std::make_shared<Callpair>();
  CallpairConfig config;
  config.emit_records = records;
  config.attach_mode = mode;
  auto program = CallpairProgram::load(config);
  if (!program) return nullptr;
  c->program = std::move(*program);
  UprobeSite site{offset, cookie.value_or(make_cookie(CookieFields{.probe_id = 1, .size_arg = 1, .aux_arg = 0}))};
  if (!c->program->attach(binary, -1, std::span(&site, 1))) return nullptr;
  if (records) {
    // A consumer drains the ring buffer as `slowburn trace` does.
    auto reader =
        RingBufferReader::open(c->program->events_fd(), [c = c.get()](std::span<const std::byte>) { ++c->records; });
    if (!reader) return nullptr;
    c->reader = std::move(*reader);
    c->consumer = std::thread([c = c.get()] {
      while (!c->stop) (void)c->reader->poll(100);
      (void)c->reader->drain();
    });
  }
  return c;
}

struct Bpftrace {
  std::optional<Subprocess> process;
  ~Bpftrace() {
    if (process) {
      process->signal(SIGINT);
      if (!process->wait_for(10s)) process->terminate();
    }
  }
};

std::shared_ptr<void> attach_bpftrace(const std::string& binary) {
  auto b = std::make_shared<Bpftrace>();
  std::string out = "/tmp/slowburn-bench-bpftrace.out";
  std::string program = "uprobe:" + binary + ":bench_target { @s[tid] = nsecs; } uretprobe:" + binary +
                        ":bench_target /@s[tid]/ { @us = hist((nsecs - @s[tid]) / 1000); delete(@s[tid]); }";
  auto child = Subprocess::spawn({"bpftrace", "-e", program}, {out, {}});
  if (!child) return nullptr;
  b->process.emplace(std::move(*child));
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (read_text(out).find("Attaching 2 probes") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline || b->process->poll()) return nullptr;
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(1s);  // "Attaching" is printed before the attach completes
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CALL_LOOP ROUNDS CALLS\n", argv[0]);
    return 2;
  }
  std::string binary = argv[1];
  int rounds = std::atoi(argv[2]);
  long calls = std::atol(argv[3]);
  libbpf_set_print(nullptr);
  auto symbols = ElfSymbols::open(binary);
  if (!symbols || symbols->lookup("bench_target").empty()) {
    std::fprintf(stderr, "bench_target not found in %s\n", binary.c_str());
    return 1;
  }
  uint64_t offset = symbols->lookup("bench_target")[0].file_offset;
  bool have_bpftrace = find_program("bpftrace").has_value();

  std::vector<std::pair<std::string, Setup>> configs = {
      {"no probe", [] { return std::make_shared<int>(0); }},
      {"empty uprobe pair", [&] { return attach_empty(binary, offset); }},
      {"slowburn, histogram only (perf link)",
       [&] { return attach_callpair(binary, offset, false, AttachMode::perf_link); }},
      {"slowburn, histogram + record (perf link)",
       [&] { return attach_callpair(binary, offset, true, AttachMode::perf_link); }},
      {"slowburn, histogram + record (multi link)",
       [&] { return attach_callpair(binary, offset, true, AttachMode::multi_link); }},
  };
  // The new collective probes, their own cookies on the same function: what
  // reading the communicator costs on top of the pair.
  for (const char* name : {"mpi.allreduce", "mpi.allgather", "gloo.allreduce"}) {
    const ProbeSpec* spec = find_probe(name);
    if (!spec) continue;
    uint64_t cookie = probe_cookie(*spec);
    const char* how = std::string_view(name) == "mpi.allreduce"   ? "communicator from a register"
                      : std::string_view(name) == "mpi.allgather" ? "communicator from the stack"
                                                                  : "options read: context pointer and tag";
    configs.push_back({fmt::format("slowburn {} cookie, {} (multi link)", name, how),
                       [&, cookie] { return attach_callpair(binary, offset, true, AttachMode::multi_link, cookie); }});
  }
  if (have_bpftrace) configs.push_back({"bpftrace one-liner (hist)", [&] { return attach_bpftrace(binary); }});

  std::map<std::string, std::vector<double>> samples;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < configs.size(); ++k) {
      auto& [name, setup] = configs[(k + static_cast<size_t>(round)) % configs.size()];  // rotate the order
      auto attached = setup();
      if (!attached) {
        std::fprintf(stderr, "could not set up '%s'\n", name.c_str());
        return 1;
      }
      samples[name].push_back(run_loop(binary, calls));
    }
  }
  double none = median(samples["no probe"]);
  double empty = median(samples["empty uprobe pair"]) - none;
  double bpftrace = have_bpftrace ? median(samples["bpftrace one-liner (hist)"]) - none : 0;
  std::printf("| configuration | ns per call (median of %d) | added by the probe, ns | vs empty pair | vs bpftrace |\n",
              rounds);
  std::printf("|---|---|---|---|---|\n");
  for (const auto& [name, setup] : configs) {
    double m = median(samples[name]);
    double added = m - none;
    std::printf("| %s | %.0f | %.0f | %s | %s |\n", name.c_str(), m, added,
                name == "no probe" ? "-" : fmt::format("{:.2f}x", added / empty).c_str(),
                name == "no probe" || !have_bpftrace ? "-" : fmt::format("{:.2f}x", added / bpftrace).c_str());
  }
  if (!have_bpftrace) std::printf("\n(bpftrace not installed: no bpftrace row)\n");
  return 0;
}
