// The MPI family of a library, told by its exported symbols, on the real
// libraries Debian ships: Open MPI's libmpi.so.40 and MPICH's
// libmpich.so.12 (the ABI of Intel MPI's and MVAPICH's libmpi.so.12), and a
// library that is no MPI at all.
#include "probes/mpi_family.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "probes/catalog.h"
#include "probes/resolver.h"

namespace slowburn::mpi_family_test {
namespace {

const std::filesystem::path kLibDir = "/usr/lib/x86_64-linux-gnu";

std::optional<MpiFamily> family_of(const std::string& file) {
  auto symbols = ElfSymbols::open(kLibDir / file);
  if (!symbols) return std::nullopt;
  return mpi_family(*symbols);
}

TEST(MpiFamily, DebiansOpenMpiAndMpichAreToldApartByTheirSymbols) {
  if (!std::filesystem::exists(kLibDir / "libmpi.so.40") || !std::filesystem::exists(kLibDir / "libmpich.so.12"))
    GTEST_SKIP() << "needs Debian's libopenmpi3 and libmpich12 (make deps)";
  EXPECT_EQ(family_of("libmpi.so.40"), MpiFamily::open_mpi);
  EXPECT_EQ(family_of("libmpich.so.12"), MpiFamily::mpich);
  EXPECT_EQ(family_of("libelf.so.1"), MpiFamily::unknown);
  EXPECT_EQ(mpi_family_name(MpiFamily::mpich), "MPICH ABI");
}

TEST(MpiFamily, EveryMpiProbeResolvesInMpich) {
  if (!std::filesystem::exists(kLibDir / "libmpich.so.12")) GTEST_SKIP() << "needs Debian's libmpich12 (make deps)";
  SymbolCache cache;
  for (const ProbeSpec& spec : probe_catalog()) {
    if (spec.backend != CommBackend::mpi) continue;
    ProbeResolution r = resolve_in_file(spec, kLibDir / "libmpich.so.12", cache);
    EXPECT_TRUE(r.resolved) << spec.name << ": " << r.reason;
  }
}

}  // namespace
}  // namespace slowburn::mpi_family_test
