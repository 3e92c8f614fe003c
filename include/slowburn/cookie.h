/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The 64-bit bpf_cookie of a uprobe attachment: one BPF program serves many
 * call sites, and the cookie tells it which probe fired and what to read.
 * The one owner of the bit layout for every program that reads cookies
 * (callpair, collagg); user space builds cookies in probes/cookie.h.
 *
 * An argument index is 1-based and counts integer argument slots of the
 * x86-64 SysV ABI: 1-6 are rdi, rsi, rdx, rcx, r8, r9; 7-15 are the stack
 * slots 8(%rsp), 16(%rsp), ... at function entry. 0 means "none".
 */
#ifndef SLOWBURN_COOKIE_H
#define SLOWBURN_COOKIE_H

/* bits 0-15: the probe id (catalog or funclat's dynamic ids). */
#define SB_COOKIE_PROBE_SHIFT 0
#define SB_COOKIE_PROBE_MASK  0xffffULL
/* bits 16-19: argument carrying the call's size (count, bytes). */
#define SB_COOKIE_SIZE_ARG_SHIFT 16
/* bits 20-23: auxiliary argument (NCCL datatype, a split's color, a rank). */
#define SB_COOKIE_AUX_ARG_SHIFT 20
/* bit 24: a synchronizing collective (collagg tracks its instances). */
#define SB_COOKIE_SYNC_SHIFT 24
#define SB_COOKIE_SYNC	     (1ULL << SB_COOKIE_SYNC_SHIFT)
/* bits 25-28: argument carrying the communicator handle. */
#define SB_COOKIE_COMM_ARG_SHIFT 25
/* bit 29: the communicator is the u64 the argument points at (gloo: the
 * options object's first member, the shared_ptr<Context>'s pointer;
 * MPI_Comm_free: the MPI_Comm* it is given). */
#define SB_COOKIE_COMM_DEREF_SHIFT 29
#define SB_COOKIE_COMM_DEREF	   (1ULL << SB_COOKIE_COMM_DEREF_SHIFT)
/* bits 30-33: an out-pointer argument whose u64 pointee is read at return
 * (the handle a communicator creation wrote). */
#define SB_COOKIE_OUT_ARG_SHIFT 30
/* bits 34-45: byte offset + 1 of a u32 sequence number inside the object the
 * communicator argument points at (gloo: the options' tag, a per process
 * group collective counter in PyTorch); 0: none. */
#define SB_COOKIE_SEQ_OFFSET_SHIFT 34
#define SB_COOKIE_SEQ_OFFSET_MASK  0xfffULL
/* bits 46-47: a key hashed at entry. */
#define SB_COOKIE_KEY_SHIFT	     46
#define SB_COOKIE_KEY_MASK	     0x3ULL
#define SB_COOKIE_KEY_NONE	     0
#define SB_COOKIE_KEY_NCCL_UNIQUE_ID 1 /* the 128-byte ncclUniqueId passed by value at 8(%rsp) */
/* bits 48-63: reserved, zero. */

#define SB_COOKIE_ARG_MASK	0xfULL
#define SB_MAX_ARG_INDEX	15
#define SB_FIRST_STACK_ARG	7
#define SB_NCCL_UNIQUE_ID_BYTES 128

#define SB_COOKIE_FIELD(cookie, shift, mask) (((cookie) >> (shift)) & (mask))

/* The fields must not overlap and must fit: checked where the header is
 * compiled, in C (BPF) and C++ alike. */
#ifdef __cplusplus
#define SB_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SB_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define SB_COOKIE_BITS_(shift, mask) ((mask) << (shift))
SB_STATIC_ASSERT((SB_COOKIE_BITS_(SB_COOKIE_PROBE_SHIFT, SB_COOKIE_PROBE_MASK) &
		  SB_COOKIE_BITS_(SB_COOKIE_SIZE_ARG_SHIFT, SB_COOKIE_ARG_MASK)) == 0,
		 "probe id and size argument overlap");
SB_STATIC_ASSERT((SB_COOKIE_BITS_(SB_COOKIE_SIZE_ARG_SHIFT, SB_COOKIE_ARG_MASK) &
		  SB_COOKIE_BITS_(SB_COOKIE_AUX_ARG_SHIFT, SB_COOKIE_ARG_MASK)) == 0,
		 "size and aux arguments overlap");
SB_STATIC_ASSERT((SB_COOKIE_BITS_(SB_COOKIE_AUX_ARG_SHIFT, SB_COOKIE_ARG_MASK) & SB_COOKIE_SYNC) == 0,
		 "aux argument and sync bit overlap");
SB_STATIC_ASSERT((SB_COOKIE_SYNC & SB_COOKIE_BITS_(SB_COOKIE_COMM_ARG_SHIFT, SB_COOKIE_ARG_MASK)) == 0,
		 "sync bit and communicator argument overlap");
SB_STATIC_ASSERT((SB_COOKIE_BITS_(SB_COOKIE_COMM_ARG_SHIFT, SB_COOKIE_ARG_MASK) & SB_COOKIE_COMM_DEREF) == 0,
		 "communicator argument and deref bit overlap");
SB_STATIC_ASSERT((SB_COOKIE_COMM_DEREF & SB_COOKIE_BITS_(SB_COOKIE_OUT_ARG_SHIFT, SB_COOKIE_ARG_MASK)) == 0,
		 "deref bit and out argument overlap");
SB_STATIC_ASSERT((SB_COOKIE_BITS_(SB_COOKIE_OUT_ARG_SHIFT, SB_COOKIE_ARG_MASK) &
		  SB_COOKIE_BITS_(SB_COOKIE_SEQ_OFFSET_SHIFT, SB_COOKIE_SEQ_OFFSET_MASK)) == 0,
		 "out argument and sequence offset overlap");
SB_STATIC_ASSERT((SB_COOKIE_BITS_(SB_COOKIE_SEQ_OFFSET_SHIFT, SB_COOKIE_SEQ_OFFSET_MASK) &
		  SB_COOKIE_BITS_(SB_COOKIE_KEY_SHIFT, SB_COOKIE_KEY_MASK)) == 0,
		 "sequence offset and key overlap");
SB_STATIC_ASSERT(SB_COOKIE_KEY_SHIFT + 2 <= 48, "a field reaches the reserved bits");
SB_STATIC_ASSERT(SB_MAX_ARG_INDEX <= SB_COOKIE_ARG_MASK, "an argument index does not fit its field");

#endif /* SLOWBURN_COOKIE_H */
