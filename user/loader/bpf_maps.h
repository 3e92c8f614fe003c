// Small helpers over libbpf's map API, shared by the loaders.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <optional>
#include <utility>
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

// One key's values in a per-CPU map, one per possible CPU; nullopt when the
// key is absent (or was deleted meanwhile). `and_delete` reads and removes
// it in one step, so nothing counted in between is lost.
template <typename Key, typename Value>
std::optional<std::vector<Value>> lookup_percpu(int fd, const Key& key, bool and_delete = false) {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return std::nullopt;
  std::vector<Value> values(static_cast<size_t>(cpus));
  int err = and_delete ? bpf_map_lookup_and_delete_elem(fd, &key, values.data())
                       : bpf_map_lookup_elem(fd, &key, values.data());
  if (err != 0) return std::nullopt;
  return values;
}

// Every entry of a per-CPU map, each summed over CPUs by `sum(key, values)`.
template <typename Key, typename Value, typename Sum>
auto sum_percpu_map(int fd, Sum&& sum, bool and_delete = false) {
  using Out = decltype(sum(std::declval<const Key&>(), std::declval<const std::vector<Value>&>()));
  std::vector<Out> result;
  for (const Key& key : map_keys<Key>(fd))
    if (auto values = lookup_percpu<Key, Value>(fd, key, and_delete)) result.push_back(sum(key, *values));
  return result;
}

}  // namespace slowburn
