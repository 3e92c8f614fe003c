// The bpf_cookie of a probe's attachments (bit layout: include/slowburn/cookie.h).
#pragma once

#include <cstdint>

#include "probes/catalog.h"

namespace slowburn {

struct CookieFields {
  uint16_t probe_id = 0;
  uint8_t size_arg = 0;
  uint8_t aux_arg = 0;
  bool synchronizing = false;  // collagg: track instances across ranks
  uint8_t comm_arg = 0;
  bool comm_deref = false;
  uint8_t out_arg = 0;
  uint16_t seq_offset = 0;  // byte offset + 1, 0 none
  uint8_t key = 0;
};

uint64_t make_cookie(const CookieFields& fields);

// What the catalog says a probe's calls carry. `synchronizing` is set for
// synchronizing collectives (collagg tracks their instances).
CookieFields cookie_fields(const ProbeSpec& spec);
inline uint64_t probe_cookie(const ProbeSpec& spec) { return make_cookie(cookie_fields(spec)); }

// Reading a cookie back (tests, and anyone checking what a link carries).
CookieFields parse_cookie(uint64_t cookie);

}  // namespace slowburn
