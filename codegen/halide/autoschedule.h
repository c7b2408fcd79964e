// Halide's autoschedulers (Debian's libhalide14 plugins: Li2018, Adams2019, Mullapudi2016) on a
// kernel's unscheduled pipeline, given the kernel's own sizes as estimates: candidates of
// `kiln tune`. For the compiler module only (it includes Halide.h).
#pragma once
#include <Halide.h>

#include "codegen/halide/lowering.h"
#include "codegen/halide/schedule_params.h"

namespace kiln::codegen::halide {

// Schedules `p` (the Funcs of `L`, none scheduled) with `choice`'s autoscheduler; throws
// kiln::Error when the plugin cannot be loaded or the autoscheduler fails.
void autoschedule(Lowering& L, Halide::Pipeline& p, const ScheduleChoice& choice);

}  // namespace kiln::codegen::halide
