/* Prints the CPython 3.11 offsets slowburn reads a rank's Python frames
 * through (user/stacks/python_stack.h), from Debian's python3.11 headers
 * (libpython3.11-dev): tests/unit/python_stack_test.cpp compares them. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#define SHOW(name, value) printf("%s %zu\n", name, (size_t)(value))

int main(void)
{
	SHOW("kRuntimeInterpMain", offsetof(_PyRuntimeState, interpreters.main));
	SHOW("kInterpThreadsHead", offsetof(PyInterpreterState, threads.head));
	SHOW("kThreadNext", offsetof(PyThreadState, next));
	SHOW("kThreadCFrame", offsetof(PyThreadState, cframe));
	SHOW("kThreadNativeId", offsetof(PyThreadState, native_thread_id));
	SHOW("kCFrameCurrent", offsetof(_PyCFrame, current_frame));
	SHOW("kFrameCode", offsetof(_PyInterpreterFrame, f_code));
	SHOW("kFramePrevious", offsetof(_PyInterpreterFrame, previous));
	SHOW("kFramePrevInstr", offsetof(_PyInterpreterFrame, prev_instr));
	SHOW("kObjectType", offsetof(PyObject, ob_type));
	SHOW("kCodeFirstLine", offsetof(PyCodeObject, co_firstlineno));
	SHOW("kCodeFilename", offsetof(PyCodeObject, co_filename));
	SHOW("kCodeQualname", offsetof(PyCodeObject, co_qualname));
	SHOW("kCodeLinetable", offsetof(PyCodeObject, co_linetable));
	SHOW("kCodeUnits", offsetof(PyCodeObject, co_code_adaptive));
	SHOW("kUnicodeLength", offsetof(PyASCIIObject, length));
	SHOW("kUnicodeState", offsetof(PyASCIIObject, state));
	SHOW("kAsciiData", sizeof(PyASCIIObject));
	SHOW("kUnicodeUtf8Length", offsetof(PyCompactUnicodeObject, utf8_length));
	SHOW("kUnicodeUtf8", offsetof(PyCompactUnicodeObject, utf8));
	SHOW("kBytesSize", offsetof(PyVarObject, ob_size));
	SHOW("kBytesData", offsetof(PyBytesObject, ob_sval));
	return 0;
}
