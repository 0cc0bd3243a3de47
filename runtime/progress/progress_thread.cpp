// The rank's progress thread (progress_thread.hpp): one per process, started on demand. Its
// loop takes newly parked waits, then waits the one way (spin, yield, sleep on the process's
// doorbell) until a parked wait's predicate holds, a new one arrives or the setting changes;
// with nothing parked and ONESIDE_PROGRESS_THREAD off it sleeps on a condition variable.
#include "progress/progress_thread.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include "context/context.hpp"

namespace oneside::detail {
namespace {

class progress_thread {
 public:
  void start() {
    const std::lock_guard lock(mutex_);
    if (!started_) {
      std::thread(&progress_thread::run, this).detach();  // see instance()
      started_ = true;
    }
  }

  void park(parked_wait& w) noexcept {
    {
      const std::lock_guard lock(mutex_);
      w.next = incoming_;
      incoming_ = &w;
    }
    changed();
  }

  void set_always(bool on) {
    if (on) start();
    {
      const std::lock_guard lock(mutex_);
      always_.store(on, std::memory_order_relaxed);
    }
    changed();
    if (!on) {
      // Until the thread has left its wait: that wait holds the transport's doorbell, which the
      // runtime's close unmaps next (the thread crashed so at exit). A wait for parked tasks'
      // waits may go on (it ends with them).
      std::unique_lock lock(mutex_);
      left_.wait(lock, [&] { return !in_wait_ || has_parked_; });
    }
  }

 private:
  // Ends the thread's current wait: it looks at its lists and settings again.
  void changed() noexcept {
    arrived_.store(true, std::memory_order_release);
    cv_.notify_one();
    notify(process_doorbell());
  }

  void run() {
    mark_runtime_thread();
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        while (incoming_ != nullptr) {
          parked_wait* w = incoming_;
          incoming_ = w->next;
          w->next = parked_;
          parked_ = w;
        }
        arrived_.store(false, std::memory_order_relaxed);
        if (parked_ == nullptr && !always_.load(std::memory_order_relaxed)) {
          cv_.wait(lock,
                   [&] { return incoming_ != nullptr || always_.load(std::memory_order_relaxed); });
          continue;
        }
      }
      // Parked waits are the rank's waits: counted and described (as the oldest one's scopes)
      // while they last. An idle progress thread is none of the program's business.
      {
        const std::lock_guard lock(mutex_);
        in_wait_ = true;
        has_parked_ = parked_ != nullptr;
      }
      set_waits_watched(parked_ != nullptr);
      parked_wait* oldest = parked_;
      while (oldest != nullptr && oldest->next != nullptr) oldest = oldest->next;
      const wait_site* own = wait_scope::exchange(oldest != nullptr ? oldest->scopes : nullptr);
      {
        backoff b(process_doorbell(), runtime_wait_policy());
        auto something = [this]() noexcept {
          drive_transport();
          return resume_ready() || arrived_.load(std::memory_order_acquire);
        };
        wait_with(b, something);
      }
      (void)wait_scope::exchange(own);
      set_waits_watched(false);
      {
        const std::lock_guard lock(mutex_);
        in_wait_ = false;
      }
      left_.notify_all();
    }
  }

  // Resumes the parked waits whose predicate holds (or threw); true when any was.
  bool resume_ready() noexcept {
    bool any = false;
    parked_wait** link = &parked_;
    while (*link != nullptr) {
      parked_wait* w = *link;
      bool done = false;
      try {
        done = w->request.test(w->request.pred);
      } catch (...) {
        w->error = std::current_exception();
        done = true;
      }
      if (!done) {
        link = &w->next;
        continue;
      }
      *link = w->next;
      void (*const resume)(void*) noexcept = w->resume;
      void* const arg = w->resume_arg;
#if defined(__SANITIZE_THREAD__)
      __tsan_release(w);  // the resumed caller acquires it (the hand-off is in libtbb)
#endif
      resume(arg);  // `w` belongs to the resumed caller from here on
      any = true;
    }
    return any;
  }

  void drive_transport() noexcept {
    if (!always_.load(std::memory_order_relaxed)) return;
    const std::lock_guard lock(transport_mutex_);
    if (!always_.load(std::memory_order_relaxed)) return;
    context* c = current_context();
    if (c == nullptr || !c->transport) return;
    try {
      c->transport->progress();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oneside: the progress thread's progress failed: %s\n", e.what());
      std::abort();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  parked_wait* incoming_ = nullptr;  // under mutex_
  bool started_ = false;             // under mutex_
  bool in_wait_ = false;             // under mutex_: the thread waits on a doorbell
  bool has_parked_ = false;          // under mutex_: ... for parked waits
  std::condition_variable left_;     // the thread left its wait
  std::atomic<bool> always_{false};
  std::atomic<bool> arrived_{false};
  std::mutex transport_mutex_;     // held while the thread runs the transport's progress
  parked_wait* parked_ = nullptr;  // the thread's own
};

// Never destroyed, and its thread never joined: at exit the thread sleeps on the condition
// variable (the runtime's close turned ONESIDE_PROGRESS_THREAD's polling off and every task
// has ended), and destroying it there would race with the destruction of the statics its
// loop uses (it crashed so). Process exit ends the thread.
progress_thread& instance() {
  static progress_thread* const t = new progress_thread();
  return *t;
}

}  // namespace

void start_progress_thread() {
  instance().start();
}

void park(parked_wait& w) noexcept {
  instance().park(w);
}

void set_progress_thread(bool on) {
  instance().set_always(on);
}

}  // namespace oneside::detail
