// libFuzzer target for the recording reader (record/recording_reader.h):
// `slowburn analyze` reads recordings written on other nodes. An input that
// starts like an SQLite file is one, byte for byte; any other input is an
// SQL script run on a fresh database marked as a recording (schema 3), so
// the fuzzer writes rows, types and schemas of its own: text where numbers
// belong, NULLs, numbers out of range, lists that are not lists, tables
// that are not ours. Either way the file is then read in full (info, then
// every call): no crash, no hang, no uncaught exception (ASan and UBSan,
// `make fuzz`); a recording that cannot be read says why.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "record/recording_reader.h"
#include "record/schema.h"

using namespace slowburn;

namespace {

// A script may not reach outside its database file.
bool reaches_outside(std::string script) {
  std::transform(script.begin(), script.end(), script.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"attach", "vacuum", "load_extension", "readfile", "writefile", "temp_store"})
    if (script.find(word) != std::string::npos) return true;
  return false;
}

// Runs the script with bounded work and memory: a runaway query is the
// script's, not the reader's.
bool write_database(const std::string& path, const std::string& script) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  int steps = 0;
  sqlite3_progress_handler(
      db, 1000, [](void* count) { return ++*static_cast<int*>(count) > 200 ? 1 : 0; }, &steps);
  // No journal, no fsync: the file is thrown away after each input.
  std::string prologue = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA application_id=" +
                         std::to_string(recording::kApplicationId) +
                         "; PRAGMA user_version=" + std::to_string(recording::kSchemaVersion) + ";";
  sqlite3_exec(db, prologue.c_str(), nullptr, nullptr, nullptr);
  sqlite3_exec(db, script.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return true;
}

// In memory (/dev/shm) where there is one: SQLite writes are then cheap.
std::string temp_path() {
  std::error_code ec;
  static const std::filesystem::path dir =
      std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : std::filesystem::temp_directory_path();
  static const std::string path = (dir / ("slowburn-recording-fuzz-" + std::to_string(getpid()) + ".sbr")).string();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  const std::string path = temp_path();
  std::filesystem::remove(path);
  if (input.rfind("SQLite format 3", 0) == 0) {
    std::ofstream(path, std::ios::binary) << input;
  } else {
    if (input.find('\0') != std::string::npos || reaches_outside(input)) return 0;
    if (!write_database(path, input)) return 0;
  }
  if (auto info = read_recording_info(path); !info && info.error().message.empty()) std::abort();
  if (auto cursor = CallCursor::open(path)) {
    RecordedCall call;
    for (int n = 0; n < 100000; ++n) {
      auto more = cursor->next(call);
      if (!more && more.error().message.empty()) std::abort();
      if (!more || !*more) break;
    }
  }
  std::filesystem::remove(path);
  return 0;
}
