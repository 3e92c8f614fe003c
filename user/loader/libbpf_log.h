// libbpf's messages: where they go, and the verifier's log kept while a
// program loads so that a rejection can be explained in the error itself.
#pragma once

#include <string>
#include <vector>

namespace slowburn {

// Routes libbpf's output through slowburn (once per process): warnings to
// stderr, debug and info only when verbose.
void set_libbpf_verbose(bool verbose);

// While alive, libbpf's warnings on this thread are also kept (the verifier
// log of a rejected program arrives as warnings). Not nested.
class LibbpfLogCapture {
 public:
  LibbpfLogCapture();
  ~LibbpfLogCapture();
  LibbpfLogCapture(const LibbpfLogCapture&) = delete;
  LibbpfLogCapture& operator=(const LibbpfLogCapture&) = delete;

  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::vector<std::string> lines_;
};

}  // namespace slowburn
