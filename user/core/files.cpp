#include "core/files.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

namespace slowburn {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_sys_error(errno, "cannot open " + path.string());
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return make_sys_error(errno, "cannot read " + path.string());
  return content.str();
}

std::vector<std::string> sorted_dir_entries(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace slowburn
