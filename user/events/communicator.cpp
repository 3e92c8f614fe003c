#include "events/communicator.h"

namespace slowburn {

// Here, not in comm/comm_registry.cpp: readers of recordings name sources
// without linking the registry (process memory, ELF, maps).
std::string_view comm_source_name(CommSource source) {
  switch (source) {
    case CommSource::job:
      return "job";
    case CommSource::memory:
      return "memory";
    case CommSource::creation:
      return "creation";
    case CommSource::inferred:
      return "inferred";
  }
  return "?";
}

}  // namespace slowburn
