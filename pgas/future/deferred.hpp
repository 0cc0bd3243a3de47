// What an operation call uses to keep continuations out of itself (internal): a flush inside
// rput or an atomic (comm/remote.hpp, bound_in_flight) may ready states whose continuations must
// neither run inside the call nor wait on that thread, which may not call oneside again soon (a
// TBB worker between tasks, a thread that blocks elsewhere). They are handed to whichever thread
// next calls progress() (every wait does).
#pragma once

#include <cstddef>

namespace oneside::pgas::detail {

// While one is open on a thread, states readied there defer their continuations; when it
// closes, what they deferred goes to the process-wide hand-off list that progress() runs.
class handing_off_frame {
 public:
  handing_off_frame() noexcept;
  ~handing_off_frame();
  handing_off_frame(const handing_off_frame&) = delete;
  handing_off_frame& operator=(const handing_off_frame&) = delete;

 private:
  std::size_t mark_;  // this thread's deferred lists before the frame opened
};

}  // namespace oneside::pgas::detail
