/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading a call's arguments at uprobe entry as its cookie says
 * (include/slowburn/cookie.h): register and stack arguments, the
 * communicator (by value or through a pointer), a u32 sequence number next
 * to it, and a hashed key. Shared by callpair and collagg so that both read
 * a call the same way.
 */
#ifndef SLOWBURN_CALLARGS_BPF_H
#define SLOWBURN_CALLARGS_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "slowburn/callpair.h"
#include "compat.bpf.h"

/* Every register is read at a constant offset first and pinned there: left
 * alone, clang sinks the loads into the switch and computes the ctx offset,
 * which the verifier rejects ("dereference of modified ctx ptr"). Stack
 * slots are user memory: read at entry, 8(%rsp) is the first. */
static __always_inline __u64 arg_by_index(struct pt_regs *ctx, __u32 index)
{
	__u64 p1 = PT_REGS_PARM1(ctx), p2 = PT_REGS_PARM2(ctx), p3 = PT_REGS_PARM3(ctx);
	__u64 p4 = PT_REGS_PARM4(ctx), p5 = PT_REGS_PARM5(ctx), p6 = PT_REGS_PARM6(ctx);
	__u64 value = 0;

	asm volatile("" : "+r"(p1), "+r"(p2), "+r"(p3), "+r"(p4), "+r"(p5), "+r"(p6));

	switch (index) {
	case 0:
		return 0;
	case 1:
		return p1;
	case 2:
		return p2;
	case 3:
		return p3;
	case 4:
		return p4;
	case 5:
		return p5;
	case 6:
		return p6;
	default:
		if (index > SB_MAX_ARG_INDEX)
			return 0;
		bpf_probe_read_user(&value, sizeof(value),
				    (void *)(PT_REGS_SP(ctx) + 8 * (index - SB_FIRST_STACK_ARG + 1)));
		return value;
	}
}

/* FNV-1a over the 128-byte ncclUniqueId at 8(%rsp): the same on every member
 * of a communicator, and nothing else needs it whole. */
static __always_inline __u64 hash_nccl_unique_id(struct pt_regs *ctx, bool *ok)
{
	__u64 words[SB_NCCL_UNIQUE_ID_BYTES / 8];
	__u64 hash = 0xcbf29ce484222325ULL;

	*ok = bpf_probe_read_user(words, sizeof(words), (void *)(PT_REGS_SP(ctx) + 8)) == 0;
	if (!*ok)
		return 0;
#pragma unroll
	for (int i = 0; i < SB_NCCL_UNIQUE_ID_BYTES / 8; i++) {
		hash ^= words[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

/* The communicator of this call, 0 when the probe has none: the argument
 * itself, or the u64 it points at. */
static __always_inline __u64 read_comm(struct pt_regs *ctx, __u64 cookie, __u64 *raw_arg, __u32 *flags)
{
	__u32 index = SB_COOKIE_FIELD(cookie, SB_COOKIE_COMM_ARG_SHIFT, SB_COOKIE_ARG_MASK);
	__u64 arg, comm = 0;

	*raw_arg = 0;
	if (!index)
		return 0;
	arg = arg_by_index(ctx, index);
	*raw_arg = arg;
	if (!(cookie & SB_COOKIE_COMM_DEREF))
		return arg;
	if (!arg || bpf_probe_read_user(&comm, sizeof(comm), (void *)arg) != 0) {
		*flags |= SB_CALL_COMM_UNREAD;
		return 0;
	}
	return comm;
}

/* Everything the entry keeps for the return, as the cookie asks. */
static __always_inline void read_call_args(struct pt_regs *ctx, __u64 cookie, struct sb_call_args *args)
{
	__u32 seq_offset = SB_COOKIE_FIELD(cookie, SB_COOKIE_SEQ_OFFSET_SHIFT, SB_COOKIE_SEQ_OFFSET_MASK);
	__u32 key = SB_COOKIE_FIELD(cookie, SB_COOKIE_KEY_SHIFT, SB_COOKIE_KEY_MASK);
	__u64 comm_arg;
	__u32 seq = 0;
	bool ok;

	args->size_arg = arg_by_index(ctx, SB_COOKIE_FIELD(cookie, SB_COOKIE_SIZE_ARG_SHIFT, SB_COOKIE_ARG_MASK));
	args->aux_arg = arg_by_index(ctx, SB_COOKIE_FIELD(cookie, SB_COOKIE_AUX_ARG_SHIFT, SB_COOKIE_ARG_MASK));
	args->out_ptr = arg_by_index(ctx, SB_COOKIE_FIELD(cookie, SB_COOKIE_OUT_ARG_SHIFT, SB_COOKIE_ARG_MASK));
	args->comm = read_comm(ctx, cookie, &comm_arg, &args->flags);
	if (seq_offset && comm_arg &&
	    bpf_probe_read_user(&seq, sizeof(seq), (void *)(comm_arg + seq_offset - 1)) == 0) {
		args->comm_seq = seq;
		args->flags |= SB_CALL_HAS_COMM_SEQ;
	}
	if (key == SB_COOKIE_KEY_NCCL_UNIQUE_ID) {
		args->key_hash = hash_nccl_unique_id(ctx, &ok);
		if (ok)
			args->flags |= SB_CALL_HAS_KEY;
	}
}

/* At return: what the out pointer now holds (a new communicator handle). */
static __always_inline void read_call_out(const struct sb_call_args *args, __u64 *out_value, __u32 *flags)
{
	*out_value = 0;
	if (args->out_ptr && bpf_probe_read_user(out_value, sizeof(*out_value), (void *)args->out_ptr) == 0)
		*flags |= SB_CALL_HAS_OUT;
}

#endif /* SLOWBURN_CALLARGS_BPF_H */
