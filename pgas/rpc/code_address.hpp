// The inverse of code_id_of (rpc.hpp): where code named in another process lies in this one.
#pragma once

#include <oneside/pgas/rpc.hpp>

namespace oneside::pgas::detail {

// The address of `id` here (cached). error(arg) when its object is not loaded here.
code_ptr code_address_of(const code_id& id);

}  // namespace oneside::pgas::detail
