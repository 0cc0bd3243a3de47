// Scopes that hold an epoch: extras over the spec's synchronization calls, never replacements.
// Each opens its epoch with the spec call in its constructor and closes it with the matching
// call when it goes out of scope (or earlier, through close()):
//
//   lock_epoch      lock(type, target) … unlock(target)
//   lock_all_epoch  lock_all() … unlock_all()
//   fence_epoch     fence(open) … fence(close)        (collective, as fence is)
//   access_epoch    start(targets) … complete()
//   exposure_epoch  post(origins) … wait()
//
// Errors: the opening call raises as usual (and nothing is held then). The closing call
// raises from close(); from the destructor it raises only when the scope ends normally — while
// an exception unwinds the scope, a failure to close is dropped so the first error reaches
// its handler. Not copyable or movable: a scope is where its epoch is.
#pragma once

#include <exception>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/group.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside::rma {

namespace detail {

// The common part: the window, how to close, whether the epoch is still open, and the
// unwinding rule. The derived scopes only open.
class epoch_scope {
 public:
  epoch_scope(const epoch_scope&) = delete;
  epoch_scope& operator=(const epoch_scope&) = delete;
  ~epoch_scope() noexcept(false) { finish(true); }

  bool is_open() const noexcept { return open_; }
  // Closes the epoch now (the destructor then does nothing); raises the closing call's error.
  void close() { finish(false); }

 protected:
  enum class closer : unsigned char { unlock, unlock_all, fence, complete, wait };
  epoch_scope(window& w, closer how, rank_t target = 0, mode assert = mode::none) noexcept
      : win_(w),
        exceptions_(std::uncaught_exceptions()),
        target_(target),
        assert_(assert),
        how_(how) {}
  void opened() noexcept { open_ = true; }

 private:
  void run_close() {
    switch (how_) {
      case closer::unlock:
        win_.unlock(target_);
        break;
      case closer::unlock_all:
        win_.unlock_all();
        break;
      case closer::fence:
        win_.fence(assert_);
        break;
      case closer::complete:
        win_.complete();
        break;
      case closer::wait:
        win_.wait();
        break;
    }
  }
  // Runs the closing call once; from the destructor, drops its error while unwinding.
  void finish(bool from_destructor) {
    if (!open_) return;
    open_ = false;
    if (from_destructor && std::uncaught_exceptions() > exceptions_) {
      try {
        run_close();
      } catch (...) {  // NOLINT(bugprone-empty-catch): the error already unwinding wins
      }
      return;
    }
    run_close();
  }

  window& win_;
  int exceptions_;
  rank_t target_;
  mode assert_;
  closer how_;
  bool open_ = false;
};

}  // namespace detail

class lock_epoch : public detail::epoch_scope {
 public:
  lock_epoch(window& w, lock_type type, rank_t target, mode assert = mode::none)
      : epoch_scope(w, closer::unlock, target) {
    w.lock(type, target, assert);
    opened();
  }
};

class lock_all_epoch : public detail::epoch_scope {
 public:
  explicit lock_all_epoch(window& w, mode assert = mode::none)
      : epoch_scope(w, closer::unlock_all) {
    w.lock_all(assert);
    opened();
  }
};

class fence_epoch : public detail::epoch_scope {
 public:
  // fence(open) now; fence(close) at the end (both collective over the window's group).
  explicit fence_epoch(window& w, mode open = mode::none, mode close = mode::none)
      : epoch_scope(w, closer::fence, 0, close) {
    w.fence(open);
    opened();
  }
};

class access_epoch : public detail::epoch_scope {
 public:
  access_epoch(window& w, const oneside::group& targets, mode assert = mode::none)
      : epoch_scope(w, closer::complete) {
    w.start(targets, assert);
    opened();
  }
};

class exposure_epoch : public detail::epoch_scope {
 public:
  exposure_epoch(window& w, const oneside::group& origins, mode assert = mode::none)
      : epoch_scope(w, closer::wait) {
    w.post(origins, assert);
    opened();
  }
};

}  // namespace oneside::rma
