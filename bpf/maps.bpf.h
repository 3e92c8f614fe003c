/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SLOWBURN_MAPS_BPF_H
#define SLOWBURN_MAPS_BPF_H

#include <bpf/bpf_helpers.h>

/* Look a key up, inserting init first when absent. Another CPU may insert the
 * same key between our lookup and update: BPF_NOEXIST then fails with
 * -EEXIST, which is fine, the second lookup finds its entry.
 *
 * `err` is an int, not a long: an inlined map update returns an int that
 * clang need not sign-extend, so a long holding -EEXIST can read as
 * 4294967279 and the racing insert would drop the count (the pitfall
 * libbpf-tools' maps.bpf.h documents). */
static __always_inline void *lookup_or_try_init(void *map, const void *key, const void *init)
{
	void *val;
	int err;

	val = bpf_map_lookup_elem(map, key);
	if (val)
		return val;
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -17 /* -EEXIST */)
		return 0;
	return bpf_map_lookup_elem(map, key);
}

#endif /* SLOWBURN_MAPS_BPF_H */
