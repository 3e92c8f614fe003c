// Every thread's user-space stack of a live process, unwound through the
// libraries' .eh_frame (Debian's libraries have no frame pointers) by
// elfutils' libdwfl, and symbolized from their symbol tables. Reading a
// running thread's registers takes a ptrace stop: each thread is stopped,
// read and let go (a stopped process stays stopped); the time it was held
// is measured and reported. Only the frames: what the process is doing,
// not what the frames mean (stacks/snapshot.h).
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
};

struct ThreadStack {
  int32_t tid = 0;
  std::vector<StackFrame> frames;  // innermost first
  std::string error;               // why the unwind stopped early, "" when it reached the end
};

struct ProcessStacks {
  int32_t pid = 0;
  std::vector<ThreadStack> threads;
  uint64_t held_ns = 0;  // how long its threads were held under ptrace, in all
};

// At most `max_frames` per thread. An error when the process cannot be
// attached (gone, not permitted: needs root or CAP_SYS_PTRACE, and a
// ptrace scope that allows it).
Result<ProcessStacks> unwind_process(int32_t pid, size_t max_frames = 64);

}  // namespace slowburn
