// The shape of user/, as docs/architecture.md draws it: every folder on a
// layer, includes pointing down only, no file a reader has to scroll
// through, no function of the session code longer than a screen.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kSource = SLOWBURN_SOURCE_DIR;
constexpr size_t kMaxFileLines = 500;
constexpr size_t kMaxFunctionLines = 80;
// The session code: what runs a trace, the service and analyze.
const std::set<std::string> kShortFunctionFolders = {"engine", "service", "analyze", "trace"};

struct Layer {
  int level = 0;
  std::string job;
};

// The table of docs/architecture.md: "| 4 | pcie | Parses ... |".
std::map<std::string, Layer> read_layers() {
  std::ifstream in(kSource / "docs/architecture.md");
  std::map<std::string, Layer> layers;
  std::regex row(R"(^\| (\d+) \| ([a-z_]+) \| (.+) \|$)");
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, row)) layers[m[2]] = {std::stoi(m[1]), m[3]};
  return layers;
}

std::vector<fs::path> sources_of(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && (entry.path().extension() == ".cpp" || entry.path().extension() == ".h"))
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string folder_of(const fs::path& file) { return fs::relative(file, kSource / "user").begin()->string(); }

TEST(Layout, EveryFolderOfUserHasALayerAndAJob) {
  auto layers = read_layers();
  ASSERT_FALSE(layers.empty()) << "no layer table in docs/architecture.md";
  for (const auto& entry : fs::directory_iterator(kSource / "user")) {
    if (!entry.is_directory()) continue;
    std::string folder = entry.path().filename();
    auto it = layers.find(folder);
    ASSERT_NE(it, layers.end()) << "user/" << folder << " is not in docs/architecture.md's layer table";
    EXPECT_GT(it->second.job.size(), 20u) << folder << ": say its job in one sentence";
    EXPECT_EQ(it->second.job.back(), '.') << folder << ": its job, one sentence";
  }
}

TEST(Layout, IncludesPointToLowerLayersOnly) {
  auto layers = read_layers();
  std::regex include(R"re(^#include "([a-z_]+)/[^"]+")re");
  std::vector<std::string> wrong;
  for (const fs::path& file : sources_of(kSource / "user")) {
    std::string from = folder_of(file);
    if (!layers.contains(from)) continue;  // the test above names it
    std::smatch m;
    for (const std::string& line : lines_of(file)) {
      if (!std::regex_search(line, m, include)) continue;
      std::string to = m[1];
      if (to == from || !layers.contains(to)) continue;  // own folder; slowburn/ (the ABI) and system headers
      if (layers[to].level >= layers[from].level)
        wrong.push_back(fs::relative(file, kSource).string() + " (layer " + std::to_string(layers[from].level) +
                        ") includes " + to + "/ (layer " + std::to_string(layers[to].level) + ")");
    }
  }
  std::ostringstream out;
  for (const std::string& w : wrong) out << "\n  " << w;
  EXPECT_TRUE(wrong.empty()) << "includes must point to a lower layer:" << out.str();
}

TEST(Layout, NoSourceFileOfUserIsOverFiveHundredLines) {
  std::ostringstream out;
  for (const fs::path& file : sources_of(kSource / "user")) {
    size_t n = lines_of(file).size();
    if (n > kMaxFileLines) out << "\n  " << fs::relative(file, kSource).string() << ": " << n << " lines";
  }
  EXPECT_TRUE(out.str().empty()) << "split by responsibility:" << out.str();
}

// Functions defined at namespace scope, as clang-format lays them out: a
// signature starting in column 0, its body closed by a lone "}" in column 0.
TEST(Layout, NoFunctionOfTheSessionCodeIsOverEightyLines) {
  std::regex signature(R"(^[A-Za-z_][\w:<>,*& ]*[\w>*&] [\w:~<>=!+\-*/\[\]]+\(.*)");
  std::ostringstream out;
  for (const fs::path& file : sources_of(kSource / "user")) {
    if (file.extension() != ".cpp" || !kShortFunctionFolders.contains(folder_of(file))) continue;
    std::vector<std::string> lines = lines_of(file);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!std::regex_match(lines[i], signature)) continue;
      size_t open = i;
      while (open < lines.size() && lines[open].find(';') == std::string::npos && lines[open].back() != '{') ++open;
      if (open == lines.size() || lines[open].back() != '{') continue;  // a declaration
      size_t close = open;
      while (close < lines.size() && lines[close] != "}") ++close;
      size_t length = close - i + 1;
      if (length > kMaxFunctionLines)
        out << "\n  " << fs::relative(file, kSource).string() << ":" << i + 1 << " " << length
            << " lines: " << lines[i].substr(0, 80);
      i = close;
    }
  }
  EXPECT_TRUE(out.str().empty()) << "a function that needs a scroll bar is several functions:" << out.str();
}

}  // namespace
