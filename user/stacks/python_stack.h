// The Python frames of a rank's thread, read from its memory as py-spy
// does, without stopping it: the interpreter's runtime state (_PyRuntime,
// an exported symbol of python3.X or libpython3.X) leads to each thread's
// state, its current frame and the chain of frames below; each frame's
// code object gives the function, the file and, through its location
// table and the frame's last instruction, the line. The structures are
// CPython's internals, so the layout is per version: Python 3.11's is known
// (the offsets are those of Debian's python3.11 headers, checked by
// tests/unit/python_stack_test.cpp); every code object read is checked to
// be one (its type is PyCode_Type), and a frame chain that does not check
// out ends with the reason. A running thread's frames may change while
// they are read: the chain is checked, not frozen.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace slowburn {

struct PythonFrame {
  std::string function;  // the qualified name: "Trainer.step"
  std::string file;
  int line = 0;  // 0 when not known
};

struct PythonStack {
  bool python = false;              // the process runs a Python interpreter
  std::vector<PythonFrame> frames;  // innermost first
  std::string error;                // why the frames are missing or cut short
};

// CPython 3.11's offsets (Include/internal/pycore_*.h, 64-bit).
struct Python311 {
  static constexpr uint64_t kRuntimeInterpMain = 48;  // _PyRuntimeState.interpreters.main
  static constexpr uint64_t kInterpThreadsHead = 16;  // PyInterpreterState.threads.head
  static constexpr uint64_t kThreadNext = 8;          // PyThreadState.next
  static constexpr uint64_t kThreadCFrame = 56;       // PyThreadState.cframe
  static constexpr uint64_t kThreadNativeId = 160;    // PyThreadState.native_thread_id
  static constexpr uint64_t kCFrameCurrent = 8;       // _PyCFrame.current_frame
  static constexpr uint64_t kFrameCode = 32;          // _PyInterpreterFrame.f_code
  static constexpr uint64_t kFramePrevious = 48;      // _PyInterpreterFrame.previous
  static constexpr uint64_t kFramePrevInstr = 56;     // _PyInterpreterFrame.prev_instr
  static constexpr uint64_t kObjectType = 8;          // PyObject.ob_type
  static constexpr uint64_t kCodeFirstLine = 72;      // PyCodeObject.co_firstlineno
  static constexpr uint64_t kCodeFilename = 112;      // PyCodeObject.co_filename
  static constexpr uint64_t kCodeQualname = 128;      // PyCodeObject.co_qualname
  static constexpr uint64_t kCodeLinetable = 136;     // PyCodeObject.co_linetable
  static constexpr uint64_t kCodeUnits = 184;         // PyCodeObject.co_code_adaptive
  static constexpr uint64_t kUnicodeLength = 16;      // PyASCIIObject.length
  static constexpr uint64_t kUnicodeState = 32;       // PyASCIIObject.state
  static constexpr uint64_t kAsciiData = 48;          // sizeof(PyASCIIObject)
  static constexpr uint64_t kUnicodeUtf8Length = 48;  // PyCompactUnicodeObject.utf8_length
  static constexpr uint64_t kUnicodeUtf8 = 56;        // PyCompactUnicodeObject.utf8
  static constexpr uint64_t kBytesSize = 16;          // PyVarObject.ob_size
  static constexpr uint64_t kBytesData = 32;          // PyBytesObject.ob_sval
};

// Pure: the line of the instruction `offset_bytes` into a code object,
// through its Python 3.11 location table (co_linetable, PEP 657); the
// first line when the offset is before the code, -1 where the table gives
// no line.
int python311_line(const std::string& linetable, int first_line, int64_t offset_bytes);

// The frames of thread `tid` of process `pid` (its main thread is the
// pid). `python` false and no error when the process maps no Python.
PythonStack read_python_stack(const std::filesystem::path& proc_root, int32_t pid, int32_t tid);

}  // namespace slowburn
