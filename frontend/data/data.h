// kiln's data support in one include: IDX files, Fashion-MNIST as tensors, and the DataLoader.
#pragma once
#include "frontend/data/dataset.h"
#include "frontend/data/idx.h"
#include "frontend/data/loader.h"
