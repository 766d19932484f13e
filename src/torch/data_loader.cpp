// The parts of torch::data's data loader (kiln/torch/data_loader.h) that do not depend on its
// template arguments.
#include <exception>
#include <string>

#include "kiln/autograd.h"
#include "kiln/torch/data_loader.h"
#include "src/util/parallel.h"

namespace torch::data {

namespace {
std::string worker_message(const std::exception_ptr& original) {
  std::string message = "Caught exception in DataLoader worker thread.";
  try {
    std::rethrow_exception(original);
  } catch (const std::exception& e) {
    message += " Original message: ";
    message += e.what();
  } catch (...) {
    message += " (The exception is not a std::exception.)";
  }
  return message;
}
}  // namespace

WorkerException::WorkerException(std::exception_ptr original)
    : kiln::Error(worker_message(original)),
      original_exception(std::move(original)),
      message(what()) {}

namespace detail {

// Note [torch::data worker threads]
// A worker makes batches beside the thread that trains on them, so, as kiln::data's prefetch
// thread (Note [DataLoader prefetch thread] in src/data/dataloader.cpp), it runs its kernels
// serially: splitting them over the intra-op pool would take the cores of the training step the
// workers are meant to overlap with (and a parallel region entered from a second thread would
// start a second OpenMP pool). Making a batch of examples is small work per op anyway. It runs
// under NoGradGuard because loading data is not differentiable: a transform's ops record no
// graph, and the batches come out as leaves that do not require grad.
std::thread start_worker_thread(std::function<void()> body) {
  return std::thread([body = std::move(body)] {
    kiln::parallel::run_serially_on_this_thread();
    kiln::NoGradGuard no_grad;
    body();
  });
}

void throw_worker_timeout(std::chrono::milliseconds timeout) {
  throw kiln::Error("Timeout in DataLoader queue while waiting for next batch (timeout was " +
                    std::to_string(timeout.count()) + " ms)");
}

}  // namespace detail
}  // namespace torch::data
