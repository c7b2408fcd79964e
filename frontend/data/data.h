// kiln's data support in one include: IDX files, Fashion-MNIST as tensors, kiln's DataLoader, and
// libtorch's torch::data API (datasets, MNIST, transforms, samplers, make_data_loader).
#pragma once
#include "frontend/data/array_ref.h"
#include "frontend/data/dataloader.h"
#include "frontend/data/dataset.h"
#include "frontend/data/datasets.h"
#include "frontend/data/example.h"
#include "frontend/data/idx.h"
#include "frontend/data/loader.h"
#include "frontend/data/samplers.h"
#include "frontend/data/transforms.h"
