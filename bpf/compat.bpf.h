/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shims for what our toolchain (libbpf 1.1, clang 14) or this kernel's BTF
 * lacks. Each names the version that made it unnecessary.
 */
#ifndef SLOWBURN_COMPAT_BPF_H
#define SLOWBURN_COMPAT_BPF_H

#include <bpf/bpf_tracing.h>

/* libbpf 1.2 ("libbpf: Add support for fetching up to 8 arguments in
 * kprobes") added PT_REGS_PARM6; 1.1 stops at 5. x86-64 passes the sixth
 * integer argument in r9. */
#ifndef PT_REGS_PARM6
#if defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (__PT_REGS_CAST(x)->r9)
#else
#define PT_REGS_PARM6(x) 0
#endif
#endif

#endif /* SLOWBURN_COMPAT_BPF_H */
