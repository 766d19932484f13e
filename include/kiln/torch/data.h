// torch::data, LibTorch's data API: datasets, transforms, samplers and the data loader, over
// Kiln's tensors (See Note [The torch:: front end] in kiln/torch.h).
//
// Note [torch::data]
// LibTorch programs build their input pipeline from templates, and this is the same set of
// templates, with LibTorch 1.13's names and shapes, so that they build unchanged:
//
//   auto dataset = torch::data::datasets::MNIST(root)
//                      .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
//                      .map(torch::data::transforms::Stack<>());
//   auto loader = torch::data::make_data_loader(std::move(dataset),
//                                               torch::data::DataLoaderOptions(64).workers(2));
//   for (torch::data::Example<>& batch : *loader) { ... batch.data, batch.target ... }
//
// It is a layer of its own over Kiln's tensor ops rather than a wrapper of kiln::data's
// DataLoader, because that one batches a TensorDataset by index (gathering rows of tensors),
// while LibTorch's pipeline calls the user's get(index) per example and runs user-written
// transforms: the batch type is whatever the chain of map()s makes, known only to the templates.
// The parts that do not depend on the types (the worker threads' setup, the samplers, MNIST) are
// compiled in src/torch/data_*.cpp.
//
// What LibTorch has that Kiln does not: the stateful data loader and ChunkDataset (datasets that
// tell the loader when they run out), and saving samplers into checkpoints (their save() and
// load() raise NotImplementedError).
//
// The files, one concept each:
//   data_example.h         Example, TensorExample
//   data_datasets.h        BatchDataset, Dataset, MapDataset, TensorDataset, SharedBatchDataset
//   data_transforms.h      Transform, BatchTransform, Lambda, Stack, TensorTransform, Normalize
//   data_samplers.h        SequentialSampler, RandomSampler, the distributed and stream samplers
//   data_loader_options.h  DataLoaderOptions
//   data_iterator.h        the iterator of an epoch
//   data_loader.h          make_data_loader, StatelessDataLoader, WorkerException
//   data_mnist.h           datasets::MNIST
#pragma once

#include "kiln/torch/data_datasets.h"
#include "kiln/torch/data_example.h"
#include "kiln/torch/data_iterator.h"
#include "kiln/torch/data_loader.h"
#include "kiln/torch/data_loader_options.h"
#include "kiln/torch/data_mnist.h"
#include "kiln/torch/data_samplers.h"
#include "kiln/torch/data_transforms.h"
