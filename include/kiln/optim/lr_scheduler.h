// Every learning-rate scheduler of PyTorch's torch.optim.lr_scheduler. Start at
// lr_scheduler_base.h (the common API and Note [Chainable learning-rate schedules]).
#pragma once

#include "kiln/optim/lr_scheduler_base.h"       // LRScheduler, PerGroup
#include "kiln/optim/lr_scheduler_composite.h"  // SequentialLR, ChainedScheduler
#include "kiln/optim/lr_scheduler_cyclic.h"     // CyclicLR, OneCycleLR
#include "kiln/optim/lr_scheduler_decay.h"      // LambdaLR ... CosineAnnealingWarmRestarts
#include "kiln/optim/lr_scheduler_plateau.h"    // ReduceLROnPlateau
