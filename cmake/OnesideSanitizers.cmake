# Sanitizer builds (presets asan-ubsan and tsan). Applied to everything in the tree so that
# the launcher, the libraries and the tests are instrumented alike.
if(ONESIDE_SANITIZE)
  if(ONESIDE_SANITIZE STREQUAL "thread")
    set(_oneside_san_flags -fsanitize=thread)
    # TSan does not model std::atomic_thread_fence (GCC warns with -Wtsan). oneside's fences
    # only order atomic flags (the doorbell's Dekker handshake, seqlocks read with atomic
    # loads); every non-atomic byte is published by release/acquire on an atomic, which TSan
    # does model. So the warning carries no finding here.
    add_compile_options(-Wno-tsan)
  elseif(ONESIDE_SANITIZE STREQUAL "address,undefined")
    set(_oneside_san_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  else()
    message(FATAL_ERROR "ONESIDE_SANITIZE must be empty, 'address,undefined' or 'thread'")
  endif()
  add_compile_options(${_oneside_san_flags} -fno-omit-frame-pointer)
  add_link_options(${_oneside_san_flags})
  # Programs built against a sanitized oneside need the same flags (tests/install uses this).
  string(JOIN " " ONESIDE_SANITIZER_FLAGS ${_oneside_san_flags})
endif()
