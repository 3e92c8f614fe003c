#include "core/files.h"

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

}  // namespace slowburn
