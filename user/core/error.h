// The one error type of slowburn, and Result<T>: a value or an Error.
// Recoverable failures travel as values; the CLI turns them into one line on
// stderr and an exit code. Messages say what failed, why, and what to do.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace slowburn {

struct Error {
  std::string message;
  int sys_errno = 0;  // errno when the failure came from the system, else 0
  // Not a failure but no answer: this node has nothing the command can
  // watch (no device, no driver, no collective library in the ranks). The
  // CLI exits 2 for it, as for a verdict it could not reach (docs/cli.md).
  bool nothing_to_watch = false;
};

template <typename... Args>
Error make_error(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...), 0};
}

// "Nothing to watch here", and why: the message a person reads.
template <typename... Args>
Error nothing_to_watch(fmt::format_string<Args...> format, Args&&... args) {
  Error e{fmt::format(format, std::forward<Args>(args)...), 0};
  e.nothing_to_watch = true;
  return e;
}

// errno-carrying variant: appends strerror and keeps the number for callers
// that branch on it (ENOENT: process gone, EPERM: not root, ...).
Error make_sys_error(int sys_errno, std::string message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace slowburn
