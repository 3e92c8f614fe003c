#include "stacks/python_stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <regex>

#include "comm/process_memory.h"
#include "probes/resolver.h"
#include "procfs/mapped_file.h"
#include "symbols/elf_symbols.h"

namespace slowburn {

namespace {

using L = Python311;

constexpr size_t kMaxThreads = 4096;
constexpr size_t kMaxFrames = 256;
constexpr size_t kMaxText = 4096;
constexpr size_t kMaxLinetable = 1 << 20;

// The location table's entry kinds (Include/cpython/code.h, 3.11).
constexpr int kNoLocation = 15;
constexpr int kLongForm = 14;
constexpr int kNoColumns = 13;
constexpr int kOneLine0 = 10;
constexpr int kOneLine2 = 12;

int scan_varint(const std::string& t, size_t& i) {
  if (i >= t.size()) return 0;
  unsigned read = static_cast<unsigned char>(t[i++]);
  int value = static_cast<int>(read & 63);
  int shift = 0;
  while ((read & 64) && i < t.size() && shift < 24) {
    read = static_cast<unsigned char>(t[i++]);
    shift += 6;
    value |= static_cast<int>(read & 63) << shift;
  }
  return value;
}

int scan_signed_varint(const std::string& t, size_t& i) {
  int u = scan_varint(t, i);
  return (u & 1) ? -(u >> 1) : (u >> 1);
}

// Where the interpreter of a process is: the mapped python3.X or
// libpython3.X that exports _PyRuntime, its load base and version.
struct Interpreter {
  int minor = 0;
  uint64_t runtime = 0;
  uint64_t code_type = 0;
  uint64_t unicode_type = 0;
};

// `mapped` says whether the process maps a Python at all; `error` why its
// interpreter cannot be read when it does.
std::optional<Interpreter> find_interpreter(const std::filesystem::path& proc_root, int32_t pid,
                                            const std::vector<MapEntry>& maps, bool& mapped, std::string& error) {
  static const std::regex name(R"((^|/)(lib)?python3\.(\d+)[^/]*$)");
  mapped = false;
  for (const MapEntry& m : maps) {
    std::smatch match;
    if (m.offset != 0 || m.deleted || !std::regex_search(m.path, match, name)) continue;
    mapped = true;
    auto file = open_mapped_file(proc_root, pid, m);
    if (!file) continue;
    auto symbols = ElfSymbols::open(file->path);
    if (!symbols) continue;
    auto runtime = symbols->object_address("_PyRuntime", m.start);
    auto code = symbols->object_address("PyCode_Type", m.start);
    auto unicode = symbols->object_address("PyUnicode_Type", m.start);
    if (!runtime || !code || !unicode) continue;
    Interpreter found{std::stoi(match[3].str()), *runtime, *code, *unicode};
    if (found.minor != 11) {
      error =
          fmt::format("Python 3.{}: its frames are not read (slowburn knows Python 3.11's frame layout)", found.minor);
      return std::nullopt;
    }
    return found;
  }
  if (mapped) error = "its Python exports no _PyRuntime, PyCode_Type and PyUnicode_Type: frames not read";
  return std::nullopt;
}

class Reader {
 public:
  Reader(const ProcessMemory& memory, const Interpreter& interp) : memory_(memory), interp_(interp) {}

  std::optional<uint64_t> pointer(uint64_t at) const {
    uint64_t v = 0;
    if (!at || !memory_.read_value(at, v)) return std::nullopt;
    return v;
  }

  // A str object's text: compact ASCII, else its UTF-8 copy when it has one.
  std::optional<std::string> text(uint64_t object) const {
    auto type = pointer(object + L::kObjectType);
    uint32_t state = 0;
    int64_t length = 0;
    if (!type || *type != interp_.unicode_type || !memory_.read_value(object + L::kUnicodeState, state)) return {};
    bool compact = state & (1u << 5), ascii = state & (1u << 6);
    uint64_t data = 0;
    if (compact && ascii) {
      if (!memory_.read_value(object + L::kUnicodeLength, length)) return {};
      data = object + L::kAsciiData;
    } else {
      auto utf8 = pointer(object + L::kUnicodeUtf8);
      if (!utf8 || !*utf8 || !memory_.read_value(object + L::kUnicodeUtf8Length, length)) return {};
      data = *utf8;
    }
    if (length < 0 || static_cast<size_t>(length) > kMaxText) return {};
    std::string out(static_cast<size_t>(length), '\0');
    if (length && !memory_.read(data, out.data(), out.size())) return {};
    return out;
  }

  std::optional<std::string> bytes(uint64_t object) const {
    int64_t size = 0;
    if (!memory_.read_value(object + L::kBytesSize, size) || size < 0 || static_cast<size_t>(size) > kMaxLinetable)
      return {};
    std::string out(static_cast<size_t>(size), '\0');
    if (size && !memory_.read(object + L::kBytesData, out.data(), out.size())) return {};
    return out;
  }

  // The thread state of `tid`, walking every interpreter's list from the main one.
  std::optional<uint64_t> thread_state(int32_t tid) const {
    auto interp = pointer(interp_.runtime + L::kRuntimeInterpMain);
    if (!interp || !*interp) return std::nullopt;
    auto ts = pointer(*interp + L::kInterpThreadsHead);
    for (size_t n = 0; ts && *ts && n < kMaxThreads; ++n) {
      uint64_t native = 0;
      if (!memory_.read_value(*ts + L::kThreadNativeId, native)) return std::nullopt;
      if (native == static_cast<uint64_t>(tid)) return *ts;
      ts = pointer(*ts + L::kThreadNext);
    }
    return std::nullopt;
  }

  // One frame: its code object checked, the function, file and line.
  std::optional<PythonFrame> frame(uint64_t at, std::string& error) const {
    auto code = pointer(at + L::kFrameCode);
    auto type = code ? pointer(*code + L::kObjectType) : std::nullopt;
    if (!type || *type != interp_.code_type) {
      error = fmt::format("frame {:#x} holds no code object (the thread moved on, or not a 3.11 layout)", at);
      return std::nullopt;
    }
    PythonFrame f;
    auto qualname = pointer(*code + L::kCodeQualname);
    auto filename = pointer(*code + L::kCodeFilename);
    f.function = qualname ? text(*qualname).value_or("?") : "?";
    f.file = filename ? text(*filename).value_or("?") : "?";
    int32_t first_line = 0;
    auto linetable = pointer(*code + L::kCodeLinetable);
    auto prev_instr = pointer(at + L::kFramePrevInstr);
    if (memory_.read_value(*code + L::kCodeFirstLine, first_line) && linetable && prev_instr) {
      auto table = bytes(*linetable);
      int64_t offset = static_cast<int64_t>(*prev_instr) - static_cast<int64_t>(*code + L::kCodeUnits);
      if (table) f.line = std::max(0, python311_line(*table, first_line, offset));
    }
    return f;
  }

 private:
  const ProcessMemory& memory_;
  const Interpreter& interp_;
};

}  // namespace

int python311_line(const std::string& t, int first_line, int64_t offset_bytes) {
  if (offset_bytes < 0) return first_line;
  // Objects/codeobject.c: each entry covers (its low 3 bits + 1) code units
  // of 2 bytes and moves the line by a delta its kind gives.
  int64_t end = 0;
  int line = first_line, found = -1;
  size_t i = 0;
  while (i < t.size() && end <= offset_bytes) {
    unsigned head = static_cast<unsigned char>(t[i]);
    int kind = static_cast<int>((head >> 3) & 15);
    end += 2 * static_cast<int64_t>((head & 7) + 1);
    size_t next = i + 1;
    int delta = 0;
    if (kind == kNoColumns || kind == kLongForm)
      delta = scan_signed_varint(t, next);
    else if (kind >= kOneLine0 && kind <= kOneLine2)
      delta = kind - kOneLine0;
    line += delta;
    found = kind == kNoLocation ? -1 : line;
    // The next entry starts at the next byte with its high bit set.
    for (i = i + 1; i < t.size() && !(static_cast<unsigned char>(t[i]) & 128); ++i) {
    }
  }
  return end > offset_bytes ? found : -1;
}

PythonStack read_python_stack(const std::filesystem::path& proc_root, int32_t pid, int32_t tid) {
  PythonStack out;
  auto maps = read_process_maps(proc_root, pid);
  if (!maps) {
    out.error = maps.error().message;
    return out;
  }
  auto interp = find_interpreter(proc_root, pid, *maps, out.python, out.error);
  if (!interp) return out;
  auto memory = open_process_memory(proc_root, pid);
  Reader reader(*memory, *interp);
  auto ts = reader.thread_state(tid);
  if (!ts) {
    out.error = fmt::format("thread {} has no Python thread state (it runs no Python code)", tid);
    return out;
  }
  auto cframe = reader.pointer(*ts + L::kThreadCFrame);
  auto at = cframe ? reader.pointer(*cframe + L::kCFrameCurrent) : std::nullopt;
  for (size_t n = 0; at && *at && n < kMaxFrames; ++n) {
    auto f = reader.frame(*at, out.error);
    if (!f) break;
    out.frames.push_back(std::move(*f));
    at = reader.pointer(*at + L::kFramePrevious);
  }
  return out;
}

}  // namespace slowburn
