// Everything in kiln::optim.
#pragma once
#include "frontend/optim/adam.h"
#include "frontend/optim/optimizer.h"
#include "frontend/optim/rmsprop.h"
#include "frontend/optim/schedulers.h"
#include "frontend/optim/sgd.h"
