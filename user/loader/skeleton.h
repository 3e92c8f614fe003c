// The one owner of a bpftool skeleton's lifecycle, for every program:
// open -> configure (rodata, map sizes, autoload) -> load -> attach ->
// destroy. RAII: destroying it closes the program's links (links()), then
// frees the programs and maps. A failed load comes back as an Error that
// says why in words a person can act on: privileges, the verifier's verdict
// with the last lines of its log, or a kernel without BTF.
#pragma once

#include <bpf/libbpf.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "loader/libbpf_log.h"
#include "loader/link_set.h"

namespace slowburn {

// Why a program could not be loaded: `what` names it ("the call-pair BPF
// programs (bpf/callpair.bpf.c)"), `err` is the positive errno, `log` what
// libbpf said meanwhile (the verifier's log on a rejection).
Error explain_load_failure(const std::string& what, int err, const std::vector<std::string>& log);

// Why a program could not be opened (the object embedded in the binary).
Error explain_open_failure(const std::string& what, int err);

// The kernel id of a loaded program (what bpftool lists), 0 if unknown.
uint32_t bpf_program_id(const bpf_program* program);

template <typename Skel>
class Skeleton {
 public:
  static Result<Skeleton> open(std::string what) {
    Skel* skel = Skel::open();
    if (!skel) return explain_open_failure(what, errno);
    return Skeleton(skel, std::move(what));
  }

  // Loads the opened (and configured) object into the kernel.
  Result<void> load() {
    LibbpfLogCapture log;
    if (int err = Skel::load(skel_); err) return explain_load_failure(what_, -err, log.lines());
    return {};
  }

  Skel* operator->() const { return skel_; }
  Skel* get() const { return skel_; }
  const std::string& what() const { return what_; }
  // The program's links: closed before the programs are destroyed.
  LinkSet& links() { return links_; }
  const LinkSet& links() const { return links_; }

  Skeleton(Skeleton&& other) noexcept
      : skel_(std::exchange(other.skel_, nullptr)), what_(std::move(other.what_)), links_(std::move(other.links_)) {}
  Skeleton& operator=(Skeleton&& other) noexcept {
    if (this != &other) {
      reset();
      skel_ = std::exchange(other.skel_, nullptr);
      what_ = std::move(other.what_);
      links_ = std::move(other.links_);
    }
    return *this;
  }
  Skeleton(const Skeleton&) = delete;
  Skeleton& operator=(const Skeleton&) = delete;
  ~Skeleton() { reset(); }

 private:
  Skeleton(Skel* skel, std::string what) : skel_(skel), what_(std::move(what)) {}
  void reset() {
    links_.clear();
    if (skel_) Skel::destroy(skel_);
    skel_ = nullptr;
  }

  Skel* skel_ = nullptr;
  std::string what_;
  LinkSet links_;
};

}  // namespace slowburn
