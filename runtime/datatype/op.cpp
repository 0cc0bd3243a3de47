// Names of the predefined ops and the rule deciding which (op, type, use) triples are
// valid (COM-13 … COM-15).
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

#include "runtime/op_rules.hpp"

namespace oneside {

std::string_view op_name(op o) noexcept {
  switch (o) {
    case op::sum:
      return "sum";
    case op::prod:
      return "prod";
    case op::min:
      return "min";
    case op::max:
      return "max";
    case op::land:
      return "land";
    case op::lor:
      return "lor";
    case op::lxor:
      return "lxor";
    case op::band:
      return "band";
    case op::bor:
      return "bor";
    case op::bxor:
      return "bxor";
    case op::minloc:
      return "minloc";
    case op::maxloc:
      return "maxloc";
    case op::replace:
      return "replace";
    case op::no_op:
      return "no_op";
  }
  return "invalid op";
}

bool op_is_valid(op o, basic_type t, op_use use) noexcept {
  if (!detail::op_defined_for(o, t)) return false;
  switch (use) {
    case op_use::collective:
      return o != op::replace && o != op::no_op;  // COM-14, COM-15
    case op_use::accumulate:
      return o != op::no_op;  // COM-15
    case op_use::get_accumulate:
      return true;
  }
  return false;
}

}  // namespace oneside
