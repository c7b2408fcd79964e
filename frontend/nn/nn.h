// Everything in kiln::nn: modules, containers, functional, init; and saving and loading weights.
#pragma once
#include "frontend/nn/activations.h"
#include "frontend/nn/container.h"
#include "frontend/nn/conv_modules.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/init.h"
#include "frontend/nn/module.h"
#include "frontend/nn/modules.h"
#include "frontend/nn/options.h"
#include "frontend/nn/rnn.h"
#include "frontend/nn/serialize.h"
#include "frontend/nn/utils.h"
