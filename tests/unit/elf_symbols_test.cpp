#include "symbols/elf_symbols.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <vector>

// Functions of this test binary, looked up in its own ELF file.
extern "C" __attribute__((noinline, used)) int slowburn_test_c_symbol(int x) { return x * 3 + 1; }
namespace sbtest {
__attribute__((noinline, used)) long demangle_me(int a, char* b, unsigned long c) {
  return a + static_cast<long>(c) + (b ? 1 : 0);
}
}  // namespace sbtest

namespace slowburn::elf_symbols_test {
namespace {

std::vector<char> file_bytes(const std::string& path, uint64_t offset, size_t size) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<char> bytes(size);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  return bytes;
}

TEST(ElfSymbols, FindsAPlainSymbolAndItsFileOffset) {
  auto symbols = ElfSymbols::open("/proc/self/exe");
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  auto found = symbols->lookup("slowburn_test_c_symbol");
  ASSERT_EQ(found.size(), 1u);
  // The bytes at the file offset are the function's code in memory.
  auto bytes = file_bytes("/proc/self/exe", found[0].file_offset, 16);
  EXPECT_EQ(std::memcmp(bytes.data(), reinterpret_cast<const void*>(&slowburn_test_c_symbol), 16), 0);
}

TEST(ElfSymbols, CppNamesMangledDemangledAndBare) {
  auto symbols = ElfSymbols::open("/proc/self/exe");
  ASSERT_TRUE(symbols.ok());
  auto mangled = symbols->lookup("_ZN6sbtest11demangle_meEiPcm");
  ASSERT_EQ(mangled.size(), 1u);
  auto signature = symbols->lookup("sbtest::demangle_me(int, char*, unsigned long)");
  ASSERT_EQ(signature.size(), 1u);
  EXPECT_EQ(signature[0].address, mangled[0].address);
  EXPECT_EQ(signature[0].demangled, "sbtest::demangle_me(int, char*, unsigned long)");
  EXPECT_EQ(symbols->lookup("sbtest::demangle_me(int,char*,unsigned long)").size(), 1u);  // spacing differs
  EXPECT_EQ(symbols->lookup("sbtest::demangle_me").size(), 1u);
  // Another signature is another function: not this one.
  EXPECT_TRUE(symbols->lookup("sbtest::demangle_me(int, char*, int)").empty());
}

TEST(ElfSymbols, MissingSymbolAndBadFiles) {
  auto symbols = ElfSymbols::open("/proc/self/exe");
  ASSERT_TRUE(symbols.ok());
  EXPECT_TRUE(symbols->lookup("no_such_function_anywhere").empty());
  auto missing = ElfSymbols::open("/nonexistent/libx.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot open /nonexistent/libx.so"), std::string::npos);
  auto not_elf = ElfSymbols::open(std::string(SLOWBURN_SOURCE_DIR) + "/tests/fixtures/README.md");
  ASSERT_FALSE(not_elf.ok());
  EXPECT_NE(not_elf.error().message.find("is not an ELF file"), std::string::npos);
}

TEST(Demangle, PassesNonCxxNamesThrough) {
  EXPECT_EQ(demangle("MPI_Allreduce"), "MPI_Allreduce");
  EXPECT_EQ(demangle("_Z10ncclIbTestPvPiS0_"), "ncclIbTest(void*, int*, int*)");
}

// from_bytes (the fuzzer's entry point) reads what open reads; a cut image
// is an error, never a crash; .gnu_debuglink's name is kept.
TEST(ElfSymbols, FromBytesReadsTheSameTablesAsOpen) {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  auto image = std::as_bytes(std::span(bytes));
  auto from_file = ElfSymbols::open("/proc/self/exe");
  auto from_memory = ElfSymbols::from_bytes(image, "self");
  ASSERT_TRUE(from_file.ok() && from_memory.ok());
  EXPECT_EQ(from_memory->function_count(), from_file->function_count());
  EXPECT_EQ(from_memory->build_id(), from_file->build_id());
  auto found = from_memory->lookup("slowburn_test_c_symbol");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].file_offset, from_file->lookup("slowburn_test_c_symbol")[0].file_offset);
  auto cut = ElfSymbols::from_bytes(image.first(40), "cut.so");
  EXPECT_FALSE(cut.ok());
  auto empty = ElfSymbols::from_bytes({}, "empty.so");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("empty.so is not an ELF file"), std::string::npos) << empty.error().message;

  std::filesystem::path stripped = SLOWBURN_BUILD_DIR "/tests/targets/debuglink/libsbdebug.so";
  if (!std::filesystem::exists(stripped)) GTEST_SKIP() << stripped << " not built (make test builds it)";
  auto linked = ElfSymbols::open(stripped);
  ASSERT_TRUE(linked.ok()) << linked.error().message;
  EXPECT_EQ(linked->debuglink(), std::optional<std::string>("libsbdebug.so.debug"));
}

}  // namespace
}  // namespace slowburn::elf_symbols_test
