// Each rank's task arena, on oneTBB (the only file of oneside that includes TBB).
// enqueue() queues tasks of a task_group into the arena so wait_enqueued() can wait for them.
//
// A wait inside a task never blocks its worker: each task enqueued here (enqueue, async) is the
// wait host of its thread (wait.hpp), and a wait that does not end at its
// first look suspends the task with oneTBB's resumable tasks (tbb::task::suspend). The worker
// goes on with other tasks; the wait is parked with the progress thread
// (progress/progress_thread.hpp), which polls its predicate (spin, yield, sleep on the
// doorbell) and resumes the task (tbb::task::resume) once it holds. A resumed task may go on on
// another worker: what the thread keeps for the task (its wait host, its open wait scopes, the
// layers' task locals) is handed back to the thread at the suspension and taken by the thread
// that resumes it.
// A task's fibers are its own (a scheduler per task that spawns any) and move with it: while
// they run, the scheduler hosts the task's waits, and when none of them can run the whole task
// is suspended as above. They end before the task does.
#include <algorithm>
#include <exception>
#include <memory>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include <oneside/runtime/task_arena.hpp>
#include <oneside/runtime/wait.hpp>

#include "context/context.hpp"
#include "fiber/fibers.hpp"
#include "progress/progress_thread.hpp"
#include "runtime/task_locals.hpp"
#include "task/arena_impl.hpp"

namespace oneside {
namespace detail {
namespace {

// What a task holds in the thread that runs it: its wait host, its open wait scopes, its frame,
// its fibers' scheduler and the layers' task locals (runtime/task_locals.hpp). A task starts
// with none of the thread's (tasks run on any thread, and a thread may run one while it waits
// for another).
struct task_state {
  wait_host* host;
  const wait_site* scopes;
  struct task_frame* frame;
  scheduler* fibers;
  void* locals;
};

task_locals_fn g_task_locals = nullptr;  // set by a static initializer of the pgas library

[[gnu::noinline]] void* exchange_locals(void* next) noexcept {
  return g_task_locals != nullptr ? g_task_locals(next) : nullptr;
}

struct task_frame {
  task_state outer;  // the thread's, while the task runs there
};
thread_local task_frame* t_frame = nullptr;

class task_host final : public wait_host {
 public:
  void wait(const wait_request& request) override;
};
task_host g_task_host;

// The thread-local accesses around a suspension are out of line: the code after
// tbb::task::suspend may run on another thread, and no address of a thread-local variable
// computed before it may be used after it.
[[gnu::noinline]] task_state exchange_state(const task_state& next) noexcept {
  task_state old{t_wait_host, wait_scope::exchange(next.scopes), t_frame,
                 exchange_scheduler(next.fibers), exchange_locals(next.locals)};
  t_wait_host = next.host;
  t_frame = next.frame;
  return old;
}

[[gnu::noinline]] void begin_frame(task_frame& f) noexcept {
  f.outer = exchange_state(task_state{&g_task_host, nullptr, &f, nullptr, nullptr});
}

// After the task's fibers ended.
[[gnu::noinline]] void end_frame(task_frame& f) noexcept {
  const task_state own = exchange_state(f.outer);
  if (own.fibers != nullptr) delete_scheduler(own.fibers);
}

// The suspending task gives the thread its values back and keeps its own.
[[gnu::noinline]] task_state leave_thread() noexcept {
  task_frame* f = t_frame;
  return exchange_state(f->outer);
}

// The resumed task takes the thread it now runs on.
[[gnu::noinline]] void enter_thread(const task_state& own) noexcept {
  own.frame->outer = exchange_state(own);
}

void resume_task(void* point) noexcept {
  oneapi::tbb::task::resume(static_cast<oneapi::tbb::task::suspend_point>(point));
}

void task_host::wait(const wait_request& request) {
  start_progress_thread();
  parked_wait parked{request, &resume_task, nullptr, nullptr, nullptr};
  const task_state own = leave_thread();
  parked.scopes = own.scopes;
  oneapi::tbb::task::suspend([&parked](oneapi::tbb::task::suspend_point point) {
    parked.resume_arg = point;
    park(parked);
  });
#if defined(__SANITIZE_THREAD__)
  // libtbb is not instrumented: what the progress thread saw before resuming this task
  // (progress_thread.cpp) happens before what the task does now, on whichever thread.
  __tsan_acquire(&parked);
#endif
  enter_thread(own);
  if (parked.error != nullptr) std::rethrow_exception(parked.error);
}

// Runs fn as a task of oneside's (see the file comment).
template <class Fn>
void run_task(const Fn& fn) {
  task_frame f;
  begin_frame(f);
  try {
    fn();
    drain_fibers();
  } catch (...) {
    drain_fibers();
    end_frame(f);
    throw;
  }
  end_frame(f);
}

}  // namespace

void set_task_locals(task_locals_fn fn) noexcept {
  g_task_locals = fn;
}

struct arena_impl::state {
  // Enqueued work (async) needs a worker thread: a thread waiting on a future does not enter
  // the arena. So no slot is reserved for application threads (their execute() waits for a
  // free slot or runs as a task there), and TBB may start one worker even where it would
  // start none (a rank bound to one core: TBB sizes its pool by the affinity mask). The limit
  // counts the thread that sets it besides the workers: `threads` workers need threads + 1
  // (with `threads`, TBB warned on every start that it ignores the request for its last worker).
  explicit state(int threads)
      : workers(oneapi::tbb::global_control::max_allowed_parallelism,
                static_cast<std::size_t>(threads) + 1),
        arena(threads, 0) {}
  oneapi::tbb::global_control workers;
  oneapi::tbb::task_arena arena;
  oneapi::tbb::task_group group;
};

arena_impl::arena_impl(int threads) : state_(std::make_unique<state>(std::max(1, threads))) {
  state_->arena.initialize();
}

arena_impl::~arena_impl() {
  wait_enqueued();
}

int arena_impl::max_concurrency() const noexcept {
  return state_->arena.max_concurrency();
}

void arena_impl::execute(const std::function<void()>& fn) {
  state_->arena.execute(fn);
}

void arena_impl::enqueue(std::function<void()> fn) {
#if defined(__SANITIZE_THREAD__)
  // libtbb is not instrumented: tell TSan that what the caller did before enqueueing happens
  // before the task (the box travels by pointer, which TSan sees moved into TBB's task).
  auto* box = new std::function<void()>(std::move(fn));
  __tsan_release(box);
  fn = [box] {
    __tsan_acquire(box);
    const std::unique_ptr<std::function<void()>> own(box);
    (*own)();
  };
#endif
  // task_arena::enqueue, not execute + run: the caller neither joins the arena (execute waits
  // for a free slot when the workers hold them all) nor runs tasks on its own thread, so an
  // agent or a progress thread may enqueue (an rpc's arrival) without blocking behind the
  // very tasks that wait for it. The group still counts the task for wait_enqueued().
  state_->arena.enqueue(state_->group.defer([f = std::move(fn)] { run_task(f); }));
}

void arena_impl::parallel_for(std::size_t n,
                              const std::function<void(std::size_t, std::size_t)>& body) {
  state_->arena.execute([&] {
    oneapi::tbb::parallel_for(
        oneapi::tbb::blocked_range<std::size_t>(0, n),
        [&](const oneapi::tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
  });
}

void arena_impl::wait_enqueued() {
  state_->arena.execute([this] { state_->group.wait(); });
}

}  // namespace detail

int task_arena_ref::max_concurrency() const noexcept {
  return impl_->max_concurrency();
}
void task_arena_ref::execute(const std::function<void()>& fn) const {
  impl_->execute(fn);
}
void task_arena_ref::enqueue(std::function<void()> fn) const {
  impl_->enqueue(std::move(fn));
}
void task_arena_ref::parallel_for(std::size_t n,
                                  const std::function<void(std::size_t, std::size_t)>& body) const {
  impl_->parallel_for(n, body);
}
void task_arena_ref::wait_enqueued() const {
  impl_->wait_enqueued();
}

task_arena_ref this_rank_arena() {
  return task_arena_ref(detail::require_context("this_rank_arena").arena.get());
}

}  // namespace oneside
