// slowburn catalog: the probe catalog, and where each probe resolves in a process
// or a library file.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/options.h"
#include "core/strings.h"
#include "probes/mpi_family.h"
#include "probes/resolver.h"

namespace slowburn::cli {

namespace {

std::string targets_text(const ProbeSpec& spec) {
  std::string out;
  for (const ProbeTarget& t : spec.targets) {
    out += fmt::format("{}{}:{}", out.empty() ? "" : ", ", t.library, join(t.symbols, "|"));
  }
  return out;
}

// For an MPI probe, which ABI family the library it resolved in belongs to.
std::optional<MpiFamily> family_of(const ProbeResolution& r, SymbolCache& cache) {
  if (!r.resolved || r.spec->backend != CommBackend::mpi) return std::nullopt;
  auto symbols = cache.get(r.attach_path);
  if (!symbols) return std::nullopt;
  return mpi_family(**symbols);
}

std::string_view family_key(MpiFamily family) {
  switch (family) {
    case MpiFamily::open_mpi:
      return "open_mpi";
    case MpiFamily::mpich:
      return "mpich";
    case MpiFamily::unknown:
      break;
  }
  return "unknown";
}

nlohmann::json resolution_json(const ProbeResolution& r, std::optional<MpiFamily> family) {
  // kind is the record's type, as in every JSON line (docs/json-lines.md);
  // what the probed call does is call_kind.
  nlohmann::json j{{"kind", "probe"},
                   {"probe", r.spec->name},
                   {"call_kind", call_kind_name(r.spec->kind)},
                   {"state", r.resolved ? "resolved" : "unavailable"}};
  if (r.resolved) {
    j["library"] = r.library;
    nlohmann::json sites = nlohmann::json::array();
    for (const AttachSite& s : r.sites) {
      nlohmann::json site{{"symbol", s.symbol}, {"address", s.address}, {"offset", s.file_offset}};
      if (!s.demangled.empty()) site["demangled"] = s.demangled;
      sites.push_back(std::move(site));
    }
    j["sites"] = std::move(sites);
    if (family) j["mpi_family"] = family_key(*family);
  } else {
    j["reason"] = r.reason;
  }
  return j;
}

}  // namespace

Command add_catalog_command(CLI::App& app) {
  struct Args {
    int32_t pid = 0;
    std::string library;
    std::string proc_root = "/proc";
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "catalog",
      "List the probe catalog; with --pid or --lib, where each probe attaches (library, symbol, offset) or why "
      "it cannot. (Its old name, 'probes', one letter from 'probe', still works for this release.)\n\nExamples:\n"
      "  slowburn catalog\n  slowburn catalog --pid 4242\n"
      "  slowburn catalog --lib /usr/lib/x86_64-linux-gnu/libmpich.so.12   (MPI probes say their ABI family)\n"
      "  slowburn catalog --lib /usr/local/cuda/lib64/libnccl.so.2 --json\n\n"
      "Exit status: 0 the catalog was printed, 1 an error (a library or process that cannot be read).");
  sub->alias("probes");
  auto* pid = add_pid(sub, args->pid, "Resolve in this process (the libraries it loaded)");
  sub->add_option("--lib", args->library, "Resolve in this library file")->excludes(pid);
  sub->add_option("--procfs-root", args->proc_root, "procfs to read (a captured tree)")
      ->capture_default_str()
      ->check(root_directory());
  add_json(sub, args->json, "probe (one per probe)");
  return {sub, [args] {
            const auto& catalog = probe_catalog();
            if (args->pid == 0 && args->library.empty()) {
              for (const ProbeSpec& spec : catalog) {
                if (args->json)
                  std::cout << nlohmann::json{{"kind", "probe"},
                                              {"probe", spec.name},
                                              {"call_kind", call_kind_name(spec.kind)},
                                              {"targets", targets_text(spec)},
                                              {"description", spec.description}}
                                   .dump()
                            << '\n';
                else
                  std::cout << fmt::format("{:<26} {:<15} {}\n", spec.name, call_kind_name(spec.kind),
                                           targets_text(spec));
              }
              return 0;
            }
            std::vector<MapEntry> maps;
            if (args->pid) {
              auto read = read_process_maps(args->proc_root, args->pid);
              if (!read)
                return fail(make_error("{} (does pid {} exist? other users' processes need root)", read.error().message,
                                       args->pid));
              maps = std::move(*read);
            }
            SymbolCache cache;
            // A file that cannot be read is one error, not every probe "unavailable".
            if (!args->pid)
              if (auto symbols = cache.get(args->library); !symbols)
                return fail(
                    make_error("--lib {}: {} (give the path of a library file, e.g. "
                               "/usr/lib/x86_64-linux-gnu/libmpi.so.40, or --pid PID of a rank)",
                               args->library, symbols.error().message));
            for (const ProbeSpec& spec : catalog) {
              ProbeResolution r = args->pid ? resolve_in_process(spec, args->proc_root, args->pid, maps, cache)
                                            : resolve_in_file(spec, args->library, cache);
              auto family = family_of(r, cache);
              if (args->json) {
                std::cout << resolution_json(r, family).dump() << '\n';
                continue;
              }
              if (!r.resolved) {
                std::cout << fmt::format("{:<26} {:<11} {}\n", spec.name, "unavailable", r.reason);
                continue;
              }
              for (const AttachSite& s : r.sites)
                std::cout << fmt::format("{:<26} {:<11} {} {}+0x{:x}{}\n", spec.name, "resolved", r.library, s.symbol,
                                         s.file_offset,
                                         family ? fmt::format(" ({})", mpi_family_name(*family)) : std::string());
            }
            return 0;
          }};
}

}  // namespace slowburn::cli
