/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Bit helpers for log2 histograms (same approach as libbpf-tools bits.bpf.h). */
#ifndef SLOWBURN_BITS_BPF_H
#define SLOWBURN_BITS_BPF_H

static __always_inline __u64 log2_u32(__u32 v)
{
	__u32 shift, r;

	r = (v > 0xFFFF) << 4;
	v >>= r;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u64 log2_u64(__u64 v)
{
	__u32 hi = v >> 32;

	if (hi)
		return log2_u32(hi) + 32;
	return log2_u32(v);
}

/* Slot of value v: 0 holds 0 and 1, slot k holds [2^k, 2^(k+1)), the last
 * slot also holds everything above it. */
static __always_inline __u64 log2_slot(__u64 v, __u32 max_slots)
{
	__u64 slot = log2_u64(v);

	/* Bound the slot with a 64-bit compare: clang otherwise compares the
	 * 32-bit subregister, and the verifier of Linux 6.1 does not carry that
	 * bound to the 64-bit register that indexes the map value ("math between
	 * map_value pointer and register with unbounded min value"; seen by
	 * make test-kernels on Debian 12's 6.1). The empty asm hides that the
	 * value fits in 32 bits. */
	asm volatile("" : "+r"(slot));
	if (slot >= max_slots)
		slot = max_slots - 1;
	return slot;
}

#endif /* SLOWBURN_BITS_BPF_H */
