// `kiln`: the command line. Each subcommand lives in its own file (see commands.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "kiln/error.h"
#include "tools/commands.h"
#include "tools/omp_env.h"

int main(int argc, char** argv) {
  kiln::tools::use_passive_omp_wait_policy(argv);  // Note [OpenMP wait policy]
  CLI::App app{"kiln: the PyTorch 2 stack in C++"};
  app.require_subcommand(1);

  bool json = false;
  CLI::App* ops = app.add_subcommand("ops", "List the op table (schema, dtypes, meta, derivative)");
  ops->add_flag("--json", json, "Print JSON instead of a table");

  kiln::examples::FashionMnistOptions train;
  CLI::App* demo = app.add_subcommand(
      "demo", "Train a small CNN on Fashion-MNIST in eager mode (examples/fashion_mnist.cpp)");
  demo->add_option("--epochs", train.epochs, "Passes over the training set")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  demo->add_option("--batch-size", train.batch_size, "Images per step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  demo->add_option("--lr", train.lr, "Peak learning rate (SGD, Nesterov momentum 0.9)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  demo->add_option("--scheduler", train.scheduler, "Learning-rate schedule")
      ->capture_default_str()
      ->check(CLI::IsMember({"onecycle", "cosine", "step", "none"}));
  demo->add_option("--seed", train.seed, "Seed of initialization, shuffling and dropout")
      ->capture_default_str();
  demo->add_option("--data", train.data_dir,
                   "Fashion-MNIST directory (Debian package dataset-fashion-mnist)")
      ->capture_default_str();
  demo->add_option("--checkpoint", train.checkpoint,
                   "Where to save model, optimizer and scheduler state (empty: don't)")
      ->capture_default_str();
  demo->add_option("--train-limit", train.train_limit, "Use only the first N training images")
      ->capture_default_str();
  demo->add_option("--test-limit", train.test_limit, "Evaluate on the first N test images")
      ->capture_default_str();
  bool quiet = false;
  demo->add_flag(
      "--compile{inductor}", train.compile_backend,
      "Compile each training step (forward, loss, backward, optimizer step) with kiln::compile "
      "(backend inductor; --compile=eager interprets the captured graphs), and compare step "
      "times");
  demo->add_flag("--quiet", quiet, "No progress bars");
  CLI::App* tour = app.add_subcommand("tour", "A short tour of the eager tensor API");
  CLI::App* passes = app.add_subcommand(
      "passes", "List the compiler's passes in pipeline order (src/pipeline/pass.cpp)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*ops) return kiln::tools::run_ops(json);
    if (*demo) {
      train.progress = !quiet;
      return kiln::tools::run_demo(train);
    }
    if (*tour) return kiln::tools::run_tour();
    if (*passes) return kiln::tools::run_passes();
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
