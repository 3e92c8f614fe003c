// Reading a rank's Python frames: the offsets of Python 3.11's structures
// against Debian's own headers (build/tests/targets/python311_offsets), and
// the line of an instruction through a real 3.11 location table.
#include "stacks/python_stack.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

namespace slowburn::python_stack_test {
namespace {

TEST(PythonStack, Python311OffsetsAreTheHeadersOffsets) {
  auto probe = std::filesystem::path(SLOWBURN_BUILD_DIR) / "tests/targets/python311_offsets";
  if (!std::filesystem::exists(probe))
    GTEST_SKIP() << "libpython3.11-dev is not installed (make deps installs it): CPython's headers are needed to "
                    "check offsets";
  std::string printed;
  FILE* out = popen(probe.c_str(), "r");
  ASSERT_NE(out, nullptr) << probe;
  char buffer[256];
  while (fgets(buffer, sizeof(buffer), out)) printed += buffer;
  ASSERT_EQ(pclose(out), 0) << printed;
  std::map<std::string, uint64_t> headers;
  std::istringstream in(printed);
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) headers[name] = value;
  using L = Python311;
  const std::map<std::string, uint64_t> ours = {{"kRuntimeInterpMain", L::kRuntimeInterpMain},
                                                {"kInterpThreadsHead", L::kInterpThreadsHead},
                                                {"kThreadNext", L::kThreadNext},
                                                {"kThreadCFrame", L::kThreadCFrame},
                                                {"kThreadNativeId", L::kThreadNativeId},
                                                {"kCFrameCurrent", L::kCFrameCurrent},
                                                {"kFrameCode", L::kFrameCode},
                                                {"kFramePrevious", L::kFramePrevious},
                                                {"kFramePrevInstr", L::kFramePrevInstr},
                                                {"kObjectType", L::kObjectType},
                                                {"kCodeFirstLine", L::kCodeFirstLine},
                                                {"kCodeFilename", L::kCodeFilename},
                                                {"kCodeQualname", L::kCodeQualname},
                                                {"kCodeLinetable", L::kCodeLinetable},
                                                {"kCodeUnits", L::kCodeUnits},
                                                {"kUnicodeLength", L::kUnicodeLength},
                                                {"kUnicodeState", L::kUnicodeState},
                                                {"kAsciiData", L::kAsciiData},
                                                {"kUnicodeUtf8Length", L::kUnicodeUtf8Length},
                                                {"kUnicodeUtf8", L::kUnicodeUtf8},
                                                {"kBytesSize", L::kBytesSize},
                                                {"kBytesData", L::kBytesData}};
  EXPECT_EQ(headers, ours);
}

// Bytes from a hex string.
std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(PythonStack, AnInstructionsLineComesFromTheLocationTable) {
  // Python 3.11's table of
  //   def sample(n):            # line 1
  //       total = 0
  //       for i in range(n):
  //           if i % 3 == 0:
  //               total += i
  //                              # a blank line
  //           else:
  //               total -= 1     # line 8
  //       return total
  // and the line code.co_positions() gives each offset.
  const std::string table = unhex(
      "8000d80c0d8045dd0d12903189588c58f000050517f0000505178801d80b0c8871893590418a3a883ad80c119051894a88458845f006000d"
      "129051894a88458845d80b10804c");
  const std::map<int64_t, int> lines = {{0, 1},  {2, 2},  {4, 2},  {6, 3},  {38, 3}, {40, 4}, {56, 4},
                                        {58, 5}, {68, 5}, {70, 8}, {80, 8}, {82, 9}, {84, 9}};
  for (const auto& [offset, line] : lines) EXPECT_EQ(python311_line(table, 1, offset), line) << "offset " << offset;
  EXPECT_EQ(python311_line(table, 1, -2), 1) << "before the first instruction: the first line";
  EXPECT_EQ(python311_line(table, 1, 10'000), -1) << "past the table";
  EXPECT_EQ(python311_line("", 7, 0), -1);
  EXPECT_EQ(python311_line(unhex("ff"), 7, 0), -1) << "no location";
}

TEST(PythonStack, AProcessWithoutPythonHasNoFramesAndNoError) {
  PythonStack s = read_python_stack("/proc", getpid(), getpid());
  EXPECT_FALSE(s.python);
  EXPECT_TRUE(s.frames.empty());
  EXPECT_EQ(s.error, "");
}

}  // namespace
}  // namespace slowburn::python_stack_test
