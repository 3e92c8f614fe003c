// Every thread's user-space stack of a live process, unwound through the
// libraries' .eh_frame (Debian's libraries have no frame pointers) by
// elfutils' libdwfl, and symbolized from their symbol tables. Reading a
// running thread's registers takes a ptrace stop: each thread is stopped,
// read and let go (a stopped process stays stopped); the time it was held
// is measured and reported. While a thread is held, the top of its stack
// and its registers are copied too: what a collective was called with lies
// there (stacks/stack_comm.h). Only the frames and bytes: what the process
// is doing, not what they mean (stacks/snapshot.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace slowburn {

struct StackFrame {
  uint64_t pc = 0;
  std::string module;   // the mapped file's name ("libmpi.so.40.30.4"), "" when none
  std::string symbol;   // demangled where C++, "" when unknown
  uint64_t offset = 0;  // pc - the symbol's start
  uint64_t sp = 0;      // the frame's stack pointer (its callee's canonical frame address), 0 when unknown
};

struct ThreadStack {
  int32_t tid = 0;
  std::vector<StackFrame> frames;  // innermost first
  std::string error;               // why the unwind stopped early, "" when it reached the end
  // Copied while it was held: the stack from the innermost frame's stack
  // pointer up (at most the capture size), and that frame's general
  // registers (DWARF numbers 0-16 on x86-64), where readable.
  uint64_t stack_at = 0;
  std::vector<uint64_t> stack_words;
  std::vector<uint64_t> registers;
};

struct ProcessStacks {
  int32_t pid = 0;
  std::vector<ThreadStack> threads;
  uint64_t held_ns = 0;  // how long its threads were held under ptrace, in all
};

// At most `max_frames` per thread, and `capture_bytes` of each thread's
// stack. An error when the process cannot be attached (gone, not
// permitted: needs root or CAP_SYS_PTRACE, and a ptrace scope that allows
// it).
Result<ProcessStacks> unwind_process(int32_t pid, size_t max_frames = 64, size_t capture_bytes = 0);

}  // namespace slowburn
