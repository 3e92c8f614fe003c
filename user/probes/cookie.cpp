#include "probes/cookie.h"

#include "slowburn/cookie.h"

namespace slowburn {

uint64_t make_cookie(const CookieFields& f) {
  auto field = [](uint64_t value, unsigned shift, uint64_t mask) { return (value & mask) << shift; };
  return field(f.probe_id, SB_COOKIE_PROBE_SHIFT, SB_COOKIE_PROBE_MASK) |
         field(f.size_arg, SB_COOKIE_SIZE_ARG_SHIFT, SB_COOKIE_ARG_MASK) |
         field(f.aux_arg, SB_COOKIE_AUX_ARG_SHIFT, SB_COOKIE_ARG_MASK) | (f.synchronizing ? SB_COOKIE_SYNC : 0) |
         field(f.comm_arg, SB_COOKIE_COMM_ARG_SHIFT, SB_COOKIE_ARG_MASK) | (f.comm_deref ? SB_COOKIE_COMM_DEREF : 0) |
         field(f.out_arg, SB_COOKIE_OUT_ARG_SHIFT, SB_COOKIE_ARG_MASK) |
         field(f.seq_offset, SB_COOKIE_SEQ_OFFSET_SHIFT, SB_COOKIE_SEQ_OFFSET_MASK) |
         field(f.key, SB_COOKIE_KEY_SHIFT, SB_COOKIE_KEY_MASK);
}

CookieFields parse_cookie(uint64_t c) {
  CookieFields f;
  f.probe_id = static_cast<uint16_t>(SB_COOKIE_FIELD(c, SB_COOKIE_PROBE_SHIFT, SB_COOKIE_PROBE_MASK));
  f.size_arg = static_cast<uint8_t>(SB_COOKIE_FIELD(c, SB_COOKIE_SIZE_ARG_SHIFT, SB_COOKIE_ARG_MASK));
  f.aux_arg = static_cast<uint8_t>(SB_COOKIE_FIELD(c, SB_COOKIE_AUX_ARG_SHIFT, SB_COOKIE_ARG_MASK));
  f.synchronizing = c & SB_COOKIE_SYNC;
  f.comm_arg = static_cast<uint8_t>(SB_COOKIE_FIELD(c, SB_COOKIE_COMM_ARG_SHIFT, SB_COOKIE_ARG_MASK));
  f.comm_deref = c & SB_COOKIE_COMM_DEREF;
  f.out_arg = static_cast<uint8_t>(SB_COOKIE_FIELD(c, SB_COOKIE_OUT_ARG_SHIFT, SB_COOKIE_ARG_MASK));
  f.seq_offset = static_cast<uint16_t>(SB_COOKIE_FIELD(c, SB_COOKIE_SEQ_OFFSET_SHIFT, SB_COOKIE_SEQ_OFFSET_MASK));
  f.key = static_cast<uint8_t>(SB_COOKIE_FIELD(c, SB_COOKIE_KEY_SHIFT, SB_COOKIE_KEY_MASK));
  return f;
}

CookieFields cookie_fields(const ProbeSpec& spec) {
  CookieFields f;
  f.probe_id = spec.id;
  f.size_arg = spec.size_arg;
  f.aux_arg = spec.aux_arg;
  f.synchronizing = spec.kind == CallKind::synchronizing;
  f.comm_arg = spec.comm_arg;
  f.comm_deref = spec.comm_deref;
  f.out_arg = spec.out_arg;
  f.seq_offset = spec.seq_offset;
  f.key = spec.key;
  return f;
}

}  // namespace slowburn
