#include "core/error.h"

#include <cstring>

namespace slowburn {

Error make_sys_error(int sys_errno, std::string message) {
  message += ": ";
  message += std::strerror(sys_errno);
  return Error{std::move(message), sys_errno};
}

}  // namespace slowburn
