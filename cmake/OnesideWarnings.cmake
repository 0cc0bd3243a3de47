# Compiler warnings for oneside's own targets (not for third-party code).
# oneside_set_warnings(target) applies them; ONESIDE_WERROR makes them errors (CI does).
set(ONESIDE_WARNING_FLAGS
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
    -Woverloaded-virtual -Wold-style-cast -Wimplicit-fallthrough -Wcast-align
    -Wnull-dereference -Wdouble-promotion -Wformat=2)

function(oneside_set_warnings target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_compile_options(${target} PRIVATE ${ONESIDE_WARNING_FLAGS})
  if(ONESIDE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
