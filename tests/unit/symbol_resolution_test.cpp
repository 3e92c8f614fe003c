// Probe resolution through ELF symbols in real files: NCCL's hidden C++
// IB transport functions in the real libnccl.so.2, symbols that live only in
// a .gnu_debuglink'd debug file, and an ncclIbIsend of another NCCL version
// (tests/targets/ builds the test libraries).
#include <gtest/gtest.h>

#include <filesystem>

#include "probes/catalog.h"
#include "probes/resolver.h"
#include "support/temp_dir.h"
#include "symbols/elf_symbols.h"

namespace slowburn::symbol_resolution_test {
namespace {

const std::filesystem::path kTargets = std::filesystem::path(SLOWBURN_BUILD_DIR) / "tests/targets";
const char* kRealNccl = "/usr/local/cuda/lib64/libnccl.so.2";

const ProbeSpec& probe(std::string_view name) {
  const ProbeSpec* spec = find_probe(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

TEST(SymbolResolution, NcclIbFunctionsAndPublicApiInTheRealLibnccl) {
  if (!std::filesystem::exists(kRealNccl)) GTEST_SKIP() << kRealNccl << " absent (NCCL not installed)";
  SymbolCache cache;
  for (const char* name : {"nccl.ib.isend", "nccl.ib.irecv", "nccl.ib.iflush", "nccl.ib.test"}) {
    ProbeResolution r = resolve_in_file(probe(name), kRealNccl, cache);
    ASSERT_TRUE(r.resolved) << name << ": " << r.reason;
    ASSERT_EQ(r.sites.size(), 1u) << name;
    // Matched by demangled signature, so a changed signature would not match.
    EXPECT_EQ(r.sites[0].demangled, r.spec->targets[0].signature) << name;
    EXPECT_GT(r.sites[0].file_offset, 0u);
  }
  for (const char* name : {"nccl.allreduce", "nccl.allgather", "nccl.reducescatter", "nccl.broadcast", "nccl.send",
                           "nccl.recv", "nccl.group_end"}) {
    ProbeResolution r = resolve_in_file(probe(name), kRealNccl, cache);
    EXPECT_TRUE(r.resolved) << name << ": " << r.reason;
  }
  EXPECT_EQ(cache.size(), 1u);  // one parse for all eleven probes
}

TEST(SymbolResolution, TheStandInCarriesTheSameSignatures) {
  SymbolCache cache;
  for (const char* name : {"nccl.ib.isend", "nccl.ib.irecv", "nccl.ib.iflush", "nccl.ib.test"}) {
    ProbeResolution r = resolve_in_file(probe(name), kTargets / "ncclib/libnccl.so.2", cache);
    ASSERT_TRUE(r.resolved) << name << ": " << r.reason;
    EXPECT_EQ(r.sites[0].demangled, r.spec->targets[0].signature);
  }
}

TEST(SymbolResolution, AnotherSignatureIsReportedUnsupported) {
  SymbolCache cache;
  ProbeResolution r = resolve_in_file(probe("nccl.ib.isend"), kTargets / "ncclib-old/libnccl.so.2", cache);
  EXPECT_FALSE(r.resolved);
  EXPECT_NE(r.reason.find("unsupported"), std::string::npos) << r.reason;
  // Both signatures are named, so the user sees what differs.
  EXPECT_NE(r.reason.find("ncclIbIsend(void*, void*, int, int, void*, void**)"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("ncclIbIsend(void*, void*, unsigned long, int, void*, void*, void**)"), std::string::npos)
      << r.reason;
}

TEST(SymbolResolution, SymbolsOnlyInADebuglinkFile) {
  auto stripped = ElfSymbols::open(kTargets / "debuglink/libsbdebug.so");
  auto full = ElfSymbols::open(kTargets / "debuglink/libsbdebug-full.so");
  ASSERT_TRUE(stripped.ok()) << stripped.error().message;
  ASSERT_TRUE(full.ok()) << full.error().message;
  ASSERT_TRUE(stripped->debug_file().has_value());
  EXPECT_FALSE(stripped->stripped());  // its symbol table came from the debug file
  EXPECT_EQ(stripped->debug_file()->filename(), "libsbdebug.so.debug");
  auto via_debug = stripped->lookup("sb_internal_helper");  // static: not in .dynsym
  auto direct = full->lookup("sb_internal_helper");
  ASSERT_EQ(via_debug.size(), 1u);
  ASSERT_EQ(direct.size(), 1u);
  EXPECT_FALSE(via_debug[0].dynamic);
  EXPECT_EQ(via_debug[0].file_offset, direct[0].file_offset);
  EXPECT_EQ(via_debug[0].address, direct[0].address);
}

TEST(SymbolResolution, SymbolsOnlyInABuildIdDebugFile) {
  // As Debian's -dbgsym packages install them: /usr/lib/debug/.build-id/ab/cdef.debug,
  // with no debug file next to the library.
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "lib");
  std::filesystem::copy_file(kTargets / "debuglink/libsbdebug.so", dir / "lib/libsbdebug.so");
  std::string id = read_build_id(dir / "lib/libsbdebug.so");
  ASSERT_GT(id.size(), 2u) << "the test library was linked without a build id";
  EXPECT_EQ(id, read_build_id(kTargets / "debuglink/libsbdebug-full.so")) << "stripping keeps the build id";
  auto by_id = dir / "debug/.build-id" / id.substr(0, 2) / (id.substr(2) + ".debug");
  std::filesystem::create_directories(by_id.parent_path());
  std::filesystem::copy_file(kTargets / "debuglink/libsbdebug.so.debug", by_id);

  auto symbols = ElfSymbols::open(dir / "lib/libsbdebug.so", DebugInfoSearch{{dir / "debug"}, {}, {}});
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  ASSERT_TRUE(symbols->debug_file().has_value());
  EXPECT_EQ(*symbols->debug_file(), by_id);
  auto via_id = symbols->lookup("sb_internal_helper");
  auto direct = ElfSymbols::open(kTargets / "debuglink/libsbdebug-full.so")->lookup("sb_internal_helper");
  ASSERT_EQ(via_id.size(), 1u);
  ASSERT_EQ(direct.size(), 1u);
  EXPECT_EQ(via_id[0].file_offset, direct[0].file_offset);

  // Without the build-id tree (and no sibling file), the library is stripped.
  auto alone = ElfSymbols::open(dir / "lib/libsbdebug.so", DebugInfoSearch{{dir / "nowhere"}, {}, {}});
  ASSERT_TRUE(alone.ok());
  EXPECT_TRUE(alone->stripped());
  EXPECT_TRUE(alone->lookup("sb_internal_helper").empty());
}

TEST(SymbolResolution, ADebugFileWithTheWrongCrcIsIgnored) {
  testing::TempDir dir;
  std::filesystem::copy_file(kTargets / "debuglink/libsbdebug.so", dir / "libsbdebug.so");
  // Same name, other contents: a debug file from another build.
  std::filesystem::copy_file(kTargets / "debuglink/libsbdebug-full.so", dir / "libsbdebug.so.debug");
  auto symbols = ElfSymbols::open(dir / "libsbdebug.so", DebugInfoSearch{{dir / "none"}, {}, {}});
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  EXPECT_FALSE(symbols->debug_file().has_value());
  EXPECT_TRUE(symbols->stripped());
  EXPECT_TRUE(symbols->lookup("sb_internal_helper").empty());  // not taken from a mismatched file
  EXPECT_EQ(symbols->lookup("sb_exported_entry").size(), 1u);  // .dynsym still works
}

TEST(SymbolResolution, AProviderFunctionInAStrippedLibrarySaysHowToGetIt) {
  const char* mlx5 = "/usr/lib/x86_64-linux-gnu/libmlx5.so.1";
  if (!std::filesystem::exists(mlx5)) GTEST_SKIP() << mlx5 << " absent (apt-get install ibverbs-providers)";
  SymbolCache cache;
  auto symbols = cache.get(mlx5);
  ASSERT_TRUE(symbols.ok());
  if (!(*symbols)->stripped()) GTEST_SKIP() << mlx5 << " has debug symbols here: the probe may resolve";
  ProbeResolution r = resolve_in_file(probe("verbs.mlx5.post_send"), mlx5, cache);
  EXPECT_FALSE(r.resolved);
  std::string id = (*symbols)->build_id();
  EXPECT_NE(r.reason.find("the file is stripped"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"),
            std::string::npos)
      << r.reason;
  // Not said of a library that is not the probe's own.
  EXPECT_EQ(resolve_in_file(probe("mpi.allreduce"), mlx5, cache).reason.find("stripped"), std::string::npos);
}

}  // namespace
}  // namespace slowburn::symbol_resolution_test
