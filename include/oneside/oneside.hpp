// The umbrella header: everything an application uses.
#pragma once

#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/rma/epoch.hpp>
#include <oneside/rma/request.hpp>
#include <oneside/rma/window.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/group.hpp>
#include <oneside/runtime/info.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/runtime.hpp>
#include <oneside/runtime/settings.hpp>
#include <oneside/runtime/task_arena.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/topology.hpp>
#include <oneside/runtime/types.hpp>
#include <oneside/runtime/version.hpp>
