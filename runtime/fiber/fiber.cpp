// Fibers on Boost.Context (the only folder of oneside that includes Boost): a scheduler per
// thread, which is also that thread's wait host (wait.hpp) while it has fibers.
//
// Every context of a thread (its own code and each fiber) has a record. The running context
// that cannot go on (it yields, waits or ends) picks the next ready one and switches to it
// directly, one Boost.Context switch; the switched-to context stores the continuation of the
// one it came from. A waiting context sits in the waiting list with its wait's predicate;
// predicates are polled when no context is ready (and every max(64, contexts)th pick, so that
// fibers which keep yielding do not starve waiters while a poll stays O(1) per pick), and a
// context whose predicate held is made ready. When
// nothing is ready, the context that found so waits the one way (spin, yield, sleep on the
// doorbell, driving the transport's progress as any wait) until a predicate holds: the thread
// then counts as waiting for hang diagnosis, and stops counting as soon as a context runs.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include <boost/context/detail/exception.hpp>
#include <boost/context/fiber.hpp>

#include <oneside/runtime/error.hpp>
#include <oneside/runtime/fiber.hpp>
#include <oneside/runtime/wait.hpp>

#include "fiber/fibers.hpp"
#include "fiber/sanitizer_switch.hpp"
#include "fiber/stack_pool.hpp"

namespace oneside::detail {

class scheduler;

class fiber_record {
 public:
  ~fiber_record() {
    if (error != nullptr) {
      // Detached (or its handle gone without join): nobody can take the exception.
      std::fputs("oneside: a detached fiber ended with an exception", stderr);
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::fprintf(stderr, ": %s", e.what());
      } catch (...) {
      }
      std::fputs("\n", stderr);
      std::terminate();
    }
  }

  void destroy_locals() noexcept {
    while (!locals.empty()) {
      std::vector<std::pair<void*, void (*)(void*) noexcept>> taken;
      taken.swap(locals);
      for (auto& [value, destroy] : taken) {
        if (value != nullptr) destroy(value);
      }
    }
  }

  boost::context::fiber cont;             // where this context goes on (while it is not running)
  bool started = false;                   // has its stack and has run (or is the thread's own)
  fiber_record* next = nullptr;           // in the ready or the waiting list
  const wait_request* request = nullptr;  // what it waits for
  std::exception_ptr request_error;       // what the request's test threw when polled
  const wait_site* scopes = nullptr;      // its open wait scopes while it does not run
  std::vector<std::pair<void*, void (*)(void*) noexcept>> locals;  // fiber_local values
  std::unique_ptr<fiber_body> body;
  std::exception_ptr error;  // what the body threw, until a join takes it
  std::uint64_t id = 0;
  std::atomic<int> refs{0};  // the handle and the running fiber
  std::atomic<bool> done{false};
  switch_marks marks;  // for the sanitizers (sanitizer_switch.hpp)
};

namespace {

void release(fiber_record* r) noexcept {
  if (r->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete r;
}

std::atomic<std::uint64_t> g_next_id{1};
std::atomic<std::size_t> g_next_local_key{0};

// An intrusive FIFO of records.
struct record_list {
  fiber_record* head = nullptr;
  fiber_record* tail = nullptr;

  bool empty() const noexcept { return head == nullptr; }
  void push(fiber_record* r) noexcept {
    r->next = nullptr;
    if (tail != nullptr) {
      tail->next = r;
    } else {
      head = r;
    }
    tail = r;
  }
  fiber_record* pop() noexcept { return empty() ? nullptr : pop_front(); }
  // pop() of a list known not to be empty.
  fiber_record* pop_front() noexcept {
    fiber_record* r = head;
    head = r->next;
    if (head == nullptr) tail = nullptr;
    r->next = nullptr;
    return r;
  }
};

}  // namespace

class scheduler final : public wait_host {
 public:
  scheduler() { main_.started = true; }
  ~scheduler() {
    drain();
    main_.destroy_locals();
    if (t_wait_host == this) t_wait_host = outer_host_;
  }
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  fiber_record* current() const noexcept { return current_; }
  bool is_fiber() const noexcept { return current_ != &main_; }
  // What t_running_fiber holds while this scheduler's thread runs the current context.
  fiber_record* running_fiber() noexcept { return is_fiber() ? current_ : nullptr; }

  fiber_record* spawn(std::unique_ptr<fiber_body> body) {
    auto owned = std::make_unique<fiber_record>();
    fiber_record* r = owned.get();
    r->body = std::move(body);
    r->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
    r->refs.store(2, std::memory_order_relaxed);
    if (live_++ == 0) {
      outer_host_ = t_wait_host;
      t_wait_host = this;
    }
    ready_.push(r);
    return owned.release();
  }

  void wait(const wait_request& request) override {
    if (polling_) {  // a predicate of another context waits: it waits in place
      wait_in_place(request);
      return;
    }
    fiber_record* self = current_;
    self->request = &request;
    waiting_.push(self);
    block();
    self->request = nullptr;
    if (self->request_error != nullptr) {
      std::rethrow_exception(std::exchange(self->request_error, nullptr));
    }
  }

  void yield() {
    if (polling_ || live_ == 0) return;
    fiber_record* self = current_;
    if (!ready_.empty() && until_poll_ > 1 && ready_.head->started) [[likely]] {
      --until_poll_;
      // The common case: another context is ready and no poll is due (pick() without the
      // detour of the caller through the ready list).
      fiber_record* next = ready_.pop_front();
      ready_.push(self);
      switch_to(next);
      return;
    }
    yield_through_pick();
  }

  // yield() when a poll is due or the next context has not started: out of line, so that the
  // common case saves few registers.
  [[gnu::noinline]] void yield_through_pick() {
    fiber_record* self = current_;
    ready_.push(self);
    fiber_record* next = pick();  // never null: this context is ready
    if (next != nullptr && next != self) switch_to(next);
  }

  // Runs the thread's fibers until none is left (from the thread's own code only).
  void drain() {
    if (live_ == 0 || is_fiber()) return;
    auto none_left = [this]() noexcept { return live_ == 0; };
    const wait_scope waiting("the fibers of this thread");
    hosted_wait(*this, nullptr, nullptr, none_left);
  }

 private:
  boost::context::fiber run(fiber_record* r, boost::context::fiber&& from) {
    arrived(std::move(from));
    try {
      r->body->run();
    } catch (const boost::context::detail::forced_unwind&) {
      throw;  // a fiber destroyed while suspended: Boost unwinds its stack
    } catch (...) {
      r->error = std::current_exception();
    }
    r->body.reset();
    r->destroy_locals();
    return finish(r);
  }

  boost::context::fiber finish(fiber_record* r) noexcept {
    --live_;
    r->done.store(true, std::memory_order_release);
    fiber_record* next = pick();
    while (next == nullptr) {
      idle(nullptr);
      next = pick();
    }
    if (live_ == 0 && t_wait_host == this) t_wait_host = outer_host_;
    prev_ = nullptr;  // the finished context has no continuation to keep
    current_ = next;
    t_running_fiber = running_fiber();
    (void)wait_scope::exchange(next->scopes);
    ended_ = r->marks;  // released by the next context, once this one is left
    before_switch(r->marks, true, next->marks);
    release(r);
    return std::move(next->cont);
  }

  // The current context is in a list already: runs others until it is picked.
  void block() {
    fiber_record* self = current_;
    for (;;) {
      fiber_record* next = pick();
      if (next == self) return;
      if (next != nullptr) {
        switch_to(next);  // returns once another context picked this one
        return;
      }
      idle(self->request);
    }
  }

  fiber_record* pick() noexcept {
    // Polling costs one test per waiter: poll once per max(64, contexts) picks, a round of
    // the thread's contexts, so that a poll costs O(1) per pick and every context had its turn
    // to issue its operation before the poll (one flush then completes the whole round of
    // remote accesses, apps/chase; counting the waiters instead cut a round of 256 fibers into
    // four polls of 64, as the waiters only grow to 256 during the round).
    if (ready_.empty() || --until_poll_ == 0) {  // until_poll_ stays >= 1 between picks
      (void)poll_waiters();
    }
    fiber_record* next = ready_.pop();
    while (next != nullptr && !next->started && !start(next)) next = ready_.pop();
    return next;
  }

  // A fiber takes its stack when it first runs, not when it is spawned: fibers that run one
  // after another (walks that never suspend, apps/chase on shm) then reuse one pooled stack,
  // still warm in the caches, and fibers waiting for their first turn hold no memory. When no
  // stack can be had, the fiber ends without running, with the error (no_mem) for its join.
  [[gnu::noinline]] bool start(fiber_record* r) noexcept {
    try {
      r->cont = boost::context::fiber(
          std::allocator_arg, pool_allocator{&pool_, &r->marks},
          [this, r](boost::context::fiber&& from) { return run(r, std::move(from)); });
      r->started = true;
      return true;
    } catch (...) {
      r->error = std::current_exception();
    }
    r->body.reset();
    if (--live_ == 0 && t_wait_host == this) t_wait_host = outer_host_;
    r->done.store(true, std::memory_order_release);
    release(r);
    return false;
  }

  // Moves the waiters whose predicate holds (or threw) to the ready list. Out of line: the
  // switch paths that call it now and then keep fewer registers live.
  [[gnu::noinline]] bool poll_waiters() noexcept {
    until_poll_ = std::max(min_poll_every, live_ + 1);
    if (waiting_.empty()) return false;
    bool any = false;
    const bool was_polling = std::exchange(polling_, true);
    fiber_record* prev = nullptr;
    fiber_record* r = waiting_.head;
    while (r != nullptr) {
      fiber_record* next = r->next;
      bool holds = false;
      try {
        holds = r->request->test(r->request->pred);
      } catch (...) {
        r->request_error = std::current_exception();
        holds = true;
      }
      if (holds) {
        if (prev != nullptr) {
          prev->next = next;
        } else {
          waiting_.head = next;
        }
        if (waiting_.tail == r) waiting_.tail = prev;
        ready_.push(r);
        any = true;
      } else {
        prev = r;
      }
      r = next;
    }
    polling_ = was_polling;
    return any;
  }

  // Nothing is ready: wait the one way until something is (on `own`'s doorbell and policy).
  // Inside a task the whole task waits instead (its host suspends it and frees the worker; the
  // progress thread polls the waiters meanwhile). What runs meanwhile on this thread (messages
  // run by the transport's progress) waits in place: the current context is in a list already.
  void idle(const wait_request* own) noexcept {
    doorbell* bell = own != nullptr ? own->bell : nullptr;
    const wait_policy* policy = own != nullptr ? own->policy : nullptr;
    auto runnable = [this]() noexcept { return !ready_.empty() || poll_waiters(); };
    const bool was_polling = std::exchange(polling_, true);
    bool waited = false;
    if (outer_host_ != nullptr) {
      try {
        hosted_wait(*outer_host_, bell, policy, runnable);
        waited = true;
      } catch (...) {
        // The host could not suspend the task (no progress thread): wait in place.
      }
    }
    if (!waited) {
      backoff b(bell != nullptr ? *bell : process_doorbell(),
                policy != nullptr ? *policy : runtime_wait_policy());
      wait_with(b, runnable);
    }
    polling_ = was_polling;
  }

  void switch_to(fiber_record* next) {
    fiber_record* self = current_;
    self->scopes = wait_scope::exchange(next->scopes);
    prev_ = self;
    current_ = next;
    t_running_fiber = running_fiber();
    if (self == &main_) marks_of_this_thread(main_.marks);  // a task's scheduler may move
    before_switch(self->marks, false, next->marks);
    arrived(std::move(next->cont).resume());
  }

  // Back in the current context: keeps the continuation of the one that switched here.
  void arrived(boost::context::fiber&& from) noexcept {
    after_switch(current_->marks, prev_ != nullptr ? &prev_->marks : nullptr);
    marks_released(ended_);
    if (prev_ != nullptr) prev_->cont = std::move(from);
  }

  fiber_record main_;  // the thread's own code
  fiber_record* current_ = &main_;
  fiber_record* prev_ = nullptr;  // the context that switched to the current one
  record_list ready_;
  record_list waiting_;
  static constexpr std::size_t min_poll_every = 64;
  std::size_t live_ = 0;                     // fibers spawned and not ended
  std::size_t until_poll_ = min_poll_every;  // picks left until the next poll
  switch_marks ended_;    // of the fiber that ended last, until the switch away from it is done
  bool polling_ = false;  // inside poll_waiters
  wait_host* outer_host_ = nullptr;  // the thread's host before its first fiber (a task's)
  stack_pool pool_;                  // last: outlives every fiber (they end in drain())
};

namespace {

// The running thread's scheduler (or the running task's, see fibers.hpp), made at the first
// spawn; the thread's own is deleted when the thread ends.
thread_local scheduler* t_scheduler [[gnu::tls_model("initial-exec")]] = nullptr;
struct thread_scheduler_owner {
  ~thread_scheduler_owner() { delete std::exchange(t_scheduler, nullptr); }
};
thread_local thread_scheduler_owner t_owner;

scheduler& this_scheduler() {
  if (t_scheduler == nullptr) {
    (void)&t_owner;  // registers the owner's destructor for this thread
    t_scheduler = new scheduler();
  }
  return *t_scheduler;
}

}  // namespace

scheduler* exchange_scheduler(scheduler* s) noexcept {
  t_running_fiber = s != nullptr ? s->running_fiber() : nullptr;
  return std::exchange(t_scheduler, s);
}

void delete_scheduler(scheduler* s) noexcept {
  delete s;
}

void drain_fibers() {
  if (t_scheduler != nullptr) t_scheduler->drain();
}

fiber_record* spawn_fiber(std::unique_ptr<fiber_body> body) {
  return this_scheduler().spawn(std::move(body));
}

void join_fiber(fiber_record* f) {
  if (f == nullptr) {
    raise(error_class::arg, error_context{.call = "fiber::join"}, "the fiber is not joinable");
  }
  if (t_scheduler != nullptr && t_scheduler->current() == f) {
    raise(error_class::arg, error_context{.call = "fiber::join"}, "a fiber cannot join itself");
  }
  {
    const wait_scope waiting("fiber::join");
    wait_until([f]() noexcept { return f->done.load(std::memory_order_acquire); });
  }
  std::exception_ptr e = std::exchange(f->error, nullptr);
  release(f);
  if (e != nullptr) std::rethrow_exception(e);
}

void release_fiber(fiber_record* f) noexcept {
  if (f != nullptr) release(f);
}

std::uint64_t fiber_id(const fiber_record* f) noexcept {
  return f->id;
}

std::size_t new_fiber_local_key() noexcept {
  return g_next_local_key.fetch_add(1, std::memory_order_relaxed);
}

void* fiber_local_get(std::size_t key) noexcept {
  if (t_scheduler == nullptr) return nullptr;
  const auto& locals = t_scheduler->current()->locals;
  return key < locals.size() ? locals[key].first : nullptr;
}

void* fiber_local_set(std::size_t key, void* value, void (*destroy)(void*) noexcept) {
  auto& locals = this_scheduler().current()->locals;
  if (key >= locals.size()) locals.resize(key + 1, {nullptr, nullptr});
  locals[key] = {value, destroy};
  return value;
}

}  // namespace oneside::detail

namespace oneside::this_fiber {

fiber::id get_id() noexcept {
  const detail::fiber_record* f = detail::t_running_fiber;
  return f != nullptr ? f->id : 0;
}

void yield() {
  if (detail::t_scheduler != nullptr) detail::t_scheduler->yield();
}

}  // namespace oneside::this_fiber
