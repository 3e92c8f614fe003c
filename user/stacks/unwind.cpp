#include "stacks/unwind.h"

#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/clock.h"
#include "symbols/elf_symbols.h"

namespace slowburn {

namespace {

char* no_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    dwfl_linux_proc_find_elf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &no_debuginfo_path,
};

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }  // detaches every thread it attached
};

struct Walk {
  Dwfl* dwfl = nullptr;
  size_t max_frames = 0;
  size_t capture_bytes = 0;
  int32_t pid = 0;
  ThreadStack* thread = nullptr;
};

constexpr unsigned kDwarfSp = 7;        // x86-64's rsp
constexpr unsigned kDwarfGeneral = 17;  // rax .. r15 and the return address column

// The innermost frame's registers, while the thread is held.
void copy_registers(Dwfl_Frame* frame, ThreadStack& thread) {
  for (unsigned regno = 0; regno < kDwarfGeneral; ++regno) {
    Dwarf_Word value = 0;
    if (dwfl_frame_reg(frame, regno, &value) == 0) thread.registers.push_back(value);
  }
}

// The held thread's stack from its stack pointer to its outermost known
// frame, at most `capture_bytes`: a copy, since the thread runs on once let go.
void copy_stack(int32_t pid, size_t capture_bytes, ThreadStack& thread) {
  if (!capture_bytes || thread.frames.empty() || !thread.frames.front().sp) return;
  uint64_t from = thread.frames.front().sp;
  uint64_t to = from;
  for (const StackFrame& f : thread.frames) to = std::max(to, f.sp);
  size_t bytes = std::min<uint64_t>(capture_bytes, to - from + 512) & ~uint64_t{7};
  thread.stack_words.resize(bytes / 8);
  iovec local{thread.stack_words.data(), bytes};
  iovec remote{reinterpret_cast<void*>(from), bytes};
  ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  thread.stack_words.resize(got > 0 ? static_cast<size_t>(got) / 8 : 0);
  thread.stack_at = from;
}

std::string base_name(const char* path) {
  if (!path) return {};
  std::string p = path;
  return p.substr(p.rfind('/') + 1);
}

int on_frame(Dwfl_Frame* frame, void* arg) {
  Walk& walk = *static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  // A return address points after its call: look up the call itself.
  Dwarf_Addr lookup = activation ? pc : pc - 1;
  StackFrame f;
  f.pc = pc;
  Dwarf_Word sp = 0;
  if (dwfl_frame_reg(frame, kDwarfSp, &sp) == 0) f.sp = sp;
  if (walk.thread->frames.empty()) copy_registers(frame, *walk.thread);
  if (Dwfl_Module* module = dwfl_addrmodule(walk.dwfl, lookup)) {
    const char* file = nullptr;
    dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &file, nullptr);
    const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    f.module = base_name(file ? file : name);
    GElf_Off offset = 0;
    GElf_Sym sym;
    if (const char* symbol = dwfl_module_addrinfo(module, lookup, &offset, &sym, nullptr, nullptr, nullptr)) {
      f.symbol = demangle(symbol);
      f.offset = offset + (lookup != pc ? 1 : 0);
    }
  }
  walk.thread->frames.push_back(std::move(f));
  return walk.thread->frames.size() >= walk.max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
}

}  // namespace

Result<ProcessStacks> unwind_process(int32_t pid, size_t max_frames, size_t capture_bytes) {
  std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&kCallbacks));
  if (!dwfl) return make_error("libdwfl: {}", dwfl_errmsg(-1));
  if (int err = dwfl_linux_proc_report(dwfl.get(), pid); err != 0)
    return make_error("pid {}: cannot read its mappings ({})", pid,
                      err > 0 ? std::string(strerror(err)) : std::string(dwfl_errmsg(-1)));
  if (dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0) return make_error("pid {}: {}", pid, dwfl_errmsg(-1));
  uint64_t began_ns = monotonic_ns();
  if (int err = dwfl_linux_proc_attach(dwfl.get(), pid, false); err != 0)
    return make_error(
        "pid {}: cannot stop it to read its registers ({}): needs root or CAP_SYS_PTRACE, and "
        "kernel.yama.ptrace_scope 0-2",
        pid, err > 0 ? std::string(strerror(err)) : std::string(dwfl_errmsg(-1)));
  ProcessStacks out;
  out.pid = pid;
  struct Threads {
    Walk walk;
    std::vector<ThreadStack>* threads;
  } state{{dwfl.get(), max_frames, capture_bytes, pid, nullptr}, &out.threads};
  int rc = dwfl_getthreads(
      dwfl.get(),
      [](Dwfl_Thread* thread, void* arg) -> int {
        auto& s = *static_cast<Threads*>(arg);
        ThreadStack stack;
        stack.tid = static_cast<int32_t>(dwfl_thread_tid(thread));
        s.threads->push_back(std::move(stack));
        s.walk.thread = &s.threads->back();
        if (dwfl_thread_getframes(thread, on_frame, &s.walk) != 0 && s.walk.thread->frames.size() < s.walk.max_frames)
          s.walk.thread->error = dwfl_errmsg(-1);
        copy_stack(s.walk.pid, s.walk.capture_bytes, *s.walk.thread);
        return DWARF_CB_OK;
      },
      &state);
  dwfl.reset();  // detach: the threads run again (a stopped one stays stopped)
  out.held_ns = monotonic_ns() - began_ns;
  if (rc != 0 && out.threads.empty()) return make_error("pid {}: {}", pid, dwfl_errmsg(-1));
  return out;
}

}  // namespace slowburn
