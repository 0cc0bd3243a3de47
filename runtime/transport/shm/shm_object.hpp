// A POSIX shared-memory object mapped into this process (RAII): created 0600 or opened by
// name, unmapped on destruction, unlinked by its creator when asked. Every shared-memory
// object of a job is named "/oneside.<job>.<what>" so the launcher can sweep them all.
//
// Memory of a created object is reserved (posix_fallocate) before anybody uses it: a tmpfs
// object is sparse, and a store to a page /dev/shm has no room for kills the process with
// SIGBUS long after the object was made. What cannot be reserved is error(no_mem) naming the
// free space of /dev/shm, and nothing is left behind. An object may keep part of its memory
// unreserved (an allocator's arena that is used from the front) and reserve it piecewise.
//
// Each process of a job on this node holds the job's liveness record (job_liveness), so that
// the objects of jobs nobody holds any more (launcher and reaper killed with SIGKILL) can be
// told from those of live jobs and removed (sweep_dead_jobs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace oneside::detail {

// "oneside.<job>." : every object of the job starts with this in /dev/shm.
std::string shm_prefix(std::string_view job_id);
// "/oneside.<job>.<what>" : the name given to shm_open.
std::string shm_name(std::string_view job_id, std::string_view what);
// Unlinks every shared-memory object of the job that belongs to this user (never another
// user's object planted under the job's names, never a symbolic link's target); returns how
// many were removed.
int sweep_job_shm(std::string_view job_id) noexcept;
// A fresh job identifier: unique on this node, unguessable by other users (the pid and 64 random
// bits), safe in file names.
std::string make_job_id();
// 64 random bits from the kernel (getrandom): the parts of object names that another local
// user must not guess (they see /dev/shm's listing, so job ids are no secret once an object of
// the job exists).
std::uint64_t random_u64();

// "1.0 TiB", "23.4 GiB", "512 bytes": sizes in messages.
std::string human_bytes(std::size_t bytes);

// What of a new object's memory is reserved when it is made: `front` bytes from its start and
// `back` bytes before its end, each rounded up to pages (by default all of it). `call` is what
// error(no_mem) names.
struct reservation {
  std::string_view call = "shm_open";
  std::size_t front = SIZE_MAX;
  std::size_t back = 0;
};

class shm_object {
 public:
  enum class mode { create, open };

  shm_object() = default;
  // create: a new object of `bytes` (zero-filled), mode 0600, its memory reserved as `r`
  // says; fails if the name exists, and with error(no_mem) (nothing made) when /dev/shm cannot
  // back the reservation. open: an existing object, mapping `bytes` of it (0: its whole size);
  // only an object of this user that nobody else may access (another user's is refused,
  // never mapped). Other failures throw error(intern) naming the object and the system error.
  shm_object(const std::string& name, std::size_t bytes, mode m, const reservation& r = {});
  // create, but false (and nothing made) when the name exists already: the caller retries
  // with another name.
  static bool try_create(shm_object& out, const std::string& name, std::size_t bytes,
                         const reservation& r = {});
  // Creates `out` under name_of(draw()), drawing again while the name is taken (another
  // process made it first): at most 8 draws, then error(intern) naming r.call. Returns the
  // draw whose name was free.
  static std::uint64_t create_under_random_name(
      shm_object& out, std::size_t bytes, const reservation& r,
      const std::function<std::uint64_t()>& draw,
      const std::function<std::string(std::uint64_t)>& name_of);
  shm_object(shm_object&& o) noexcept;
  shm_object& operator=(shm_object&& o) noexcept;
  shm_object(const shm_object&) = delete;
  shm_object& operator=(const shm_object&) = delete;
  ~shm_object();

  void* data() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }
  const std::string& name() const noexcept { return name_; }
  // Removes the name (the mapping stays valid); peers can no longer open it.
  void unlink() noexcept;
  // Reserves [offset, offset + bytes) (rounded out to pages) of an object this process created
  // with part of it unreserved; reserving again what is reserved costs a system call and
  // nothing else. Thread-safe. error(no_mem) naming `call` and /dev/shm's free space when it
  // cannot (nothing more is reserved then); error(intern) for a range outside the object.
  void reserve(std::size_t offset, std::size_t bytes, std::string_view call) const;

 private:
  // Sizes and reserves (create) or measures (open) the object behind `fd`, maps it, and closes
  // fd unless part of the object is left to reserve().
  void finish(int fd, std::size_t bytes, mode m, const reservation& r);
  void reset() noexcept;
  std::string name_;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;  // kept while part of a created object is unreserved
};

// This process's part in a job on this node: a shared flock on the job's liveness record
// "/oneside.<job>.live", which every live process of the job here holds (the launcher and its
// reaper, and each rank while its runtime is open). A sweeper that gets the record's lock
// exclusively knows that nobody of the job is left. The record is created (0600, this user's)
// before any other object of the job and removed after all of them, so a job whose objects
// exist has a record unless an older oneside made it.
class job_liveness {
 public:
  job_liveness() = default;
  // Creates the job's record or opens the existing one, and holds it. A record a sweeper
  // removed between our open and our lock is noticed (it has no name any more) and made
  // again. Throws error(intern) naming `call` when the record is another user's or open to
  // others (never used then), or on a system error.
  static job_liveness join(std::string_view job_id, std::string_view call);
  job_liveness(job_liveness&& o) noexcept;
  job_liveness& operator=(job_liveness&& o) noexcept;
  job_liveness(const job_liveness&) = delete;
  job_liveness& operator=(const job_liveness&) = delete;
  ~job_liveness();  // stops holding (without sweeping)

  // The record's descriptor (close-on-exec): a process forked without exec holds the record
  // as long as it keeps this descriptor open.
  int fd() const noexcept { return fd_; }
  // Stops holding; the last process of the job on this node to leave removes whatever the
  // job left in /dev/shm (objects of ranks that died) and the record.
  void leave() noexcept;

 private:
  std::string job_;
  int fd_ = -1;
};

// What sweep_dead_jobs did: objects removed and the jobs they belonged to, and objects left
// alone because their job has no liveness record (made by an older oneside, whose processes
// cannot be told alive or dead).
struct sweep_result {
  int jobs = 0;
  int objects = 0;
  int unknown_jobs = 0;
  int unknown_objects = 0;
};

// Removes the objects of every job of this user on this node whose liveness record nobody
// holds: one listing of /dev/shm, then for each job a non-blocking exclusive lock on its
// record. Never touches a live job's objects, another user's objects or anything not
// named like oneside's.
sweep_result sweep_dead_jobs() noexcept;

}  // namespace oneside::detail
