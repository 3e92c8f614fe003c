// Small helpers over libbpf's map API, shared by the loaders.
#pragma once

#include <bpf/bpf.h>

#include <vector>

namespace slowburn {

// Every key of a map, read before anything is deleted (deleting while
// iterating restarts get_next_key from the beginning).
template <typename Key>
std::vector<Key> map_keys(int fd) {
  std::vector<Key> keys;
  Key key{}, next{};
  const void* cursor = nullptr;
  while (bpf_map_get_next_key(fd, cursor, &next) == 0) {
    keys.push_back(next);
    key = next;
    cursor = &key;
  }
  return keys;
}

}  // namespace slowburn
