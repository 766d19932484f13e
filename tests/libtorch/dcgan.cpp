// A LibTorch program in the shape of pytorch/examples cpp/dcgan: a deep convolutional GAN on an
// MNIST-format data set (here Fashion-MNIST) scaled to [-1, 1].
//
//   dcgan DATA_ROOT [MAX_BATCHES]
//
// DATA_ROOT holds the uncompressed IDX files, as for mnist.cpp (see prepare-fashion-mnist).
// MAX_BATCHES (default 0 = one whole epoch) stops training after that many batches. It then saves
// checkpoints of both models and both optimizers into the working directory
// (generator-checkpoint.pt, generator-optimizer-checkpoint.pt, discriminator-checkpoint.pt,
// discriminator-optimizer-checkpoint.pt, dcgan-sample.pt), loads them into fresh objects and
// checks that the restored generator and its optimizer continue exactly like the originals.
//
// Each batch prints D_loss and G_loss; the last line is machine readable:
//   RESULT d_loss=<float> g_loss=<float>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

namespace {

constexpr int64_t kNoiseSize = 100;
constexpr int64_t kBatchSize = 64;

}  // namespace

struct DCGANGeneratorImpl : torch::nn::Module {
  explicit DCGANGeneratorImpl(int64_t noise_size)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, 256, 4).bias(false)),
        batch_norm1(256),
        conv2(torch::nn::ConvTranspose2dOptions(256, 128, 3).stride(2).padding(1).bias(false)),
        batch_norm2(128),
        conv3(torch::nn::ConvTranspose2dOptions(128, 64, 4).stride(2).padding(1).bias(false)),
        batch_norm3(64),
        conv4(torch::nn::ConvTranspose2dOptions(64, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  // [N, noise, 1, 1] -> [N, 256, 4, 4] -> [N, 128, 7, 7] -> [N, 64, 14, 14] -> [N, 1, 28, 28]
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));
    x = torch::relu(batch_norm2(conv2(x)));
    x = torch::relu(batch_norm3(conv3(x)));
    x = torch::tanh(conv4(x));
    return x;
  }

  torch::nn::ConvTranspose2d conv1;
  torch::nn::BatchNorm2d batch_norm1;
  torch::nn::ConvTranspose2d conv2;
  torch::nn::BatchNorm2d batch_norm2;
  torch::nn::ConvTranspose2d conv3;
  torch::nn::BatchNorm2d batch_norm3;
  torch::nn::ConvTranspose2d conv4;
};
TORCH_MODULE(DCGANGenerator);

torch::nn::Sequential make_discriminator() {
  // [N, 1, 28, 28] -> [N, 64, 14, 14] -> [N, 128, 7, 7] -> [N, 256, 3, 3] -> [N, 1, 1, 1]
  return torch::nn::Sequential(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 64, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 128, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(128),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(128, 256, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(256),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(256, 1, 3).stride(1).padding(0).bias(false)),
      torch::nn::Sigmoid());
}

// One generator update against `discriminator`, as in the training loop: returns the loss.
torch::Tensor generator_step(DCGANGenerator& generator, torch::optim::Adam& optimizer,
                             torch::nn::Sequential& discriminator, const torch::Tensor& noise) {
  generator->zero_grad();
  auto fake_images = generator->forward(noise);
  auto labels = torch::ones(noise.size(0));
  auto output = discriminator->forward(fake_images).reshape(labels.sizes());
  auto loss = torch::binary_cross_entropy(output, labels);
  loss.backward();
  optimizer.step();
  return loss;
}

bool same_parameters(torch::nn::Module& a, torch::nn::Module& b) {
  auto pa = a.parameters();
  auto pb = b.parameters();
  if (pa.size() != pb.size()) {
    return false;
  }
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::allclose(pa[i], pb[i], /*rtol=*/1e-5, /*atol=*/1e-6)) {
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: " << argv[0] << " DATA_ROOT [MAX_BATCHES]\n";
    return 2;
  }
  const std::string data_root = argv[1];
  const int64_t max_batches = argc > 2 ? std::stoll(argv[2]) : 0;

  try {
    torch::manual_seed(1);
    torch::Device device(torch::kCPU);
    if (torch::cuda::is_available()) {
      std::cout << "CUDA is available! Training on GPU." << std::endl;
      device = torch::Device(torch::kCUDA);
    }

    DCGANGenerator generator(kNoiseSize);
    generator->to(device);
    torch::nn::Sequential discriminator = make_discriminator();
    discriminator->to(device);
    // The two forwards as function values, so that one line can hand each to a compiler.
    std::function<torch::Tensor(DCGANGeneratorImpl&, torch::Tensor)> generate =
        [](DCGANGeneratorImpl& g, torch::Tensor noise) { return g.forward(noise); };
    std::function<torch::Tensor(torch::nn::SequentialImpl&, torch::Tensor)> discriminate =
        [](torch::nn::SequentialImpl& d, torch::Tensor images) { return d.forward(images); };
#ifdef KILN_COMPILE
    generate = torch::compile(generate);  // the lines a compiled run adds (Kiln's kiln::compile)
    discriminate = torch::compile(discriminate);
#endif

    auto dataset = torch::data::datasets::MNIST(data_root)
                       .map(torch::data::transforms::Normalize<>(0.5, 0.5))
                       .map(torch::data::transforms::Stack<>());
    const int64_t batches_per_epoch = static_cast<int64_t>(
        std::ceil(static_cast<double>(dataset.size().value()) / static_cast<double>(kBatchSize)));
    auto data_loader = torch::data::make_data_loader(
        std::move(dataset), torch::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));

    torch::optim::Adam generator_optimizer(
        generator->parameters(),
        torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
    torch::optim::Adam discriminator_optimizer(
        discriminator->parameters(),
        torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));

    const int64_t total_batches =
        max_batches > 0 ? std::min(max_batches, batches_per_epoch) : batches_per_epoch;
    int64_t batch_index = 0;
    float last_d_loss = 0;
    float last_g_loss = 0;
    for (torch::data::Example<>& batch : *data_loader) {
      if (batch_index == total_batches) {
        break;
      }
      const int64_t n = batch.data.size(0);

      // Discriminator on real images, with smoothed labels in [0.8, 1.0).
      discriminator->zero_grad();
      torch::Tensor real_images = batch.data.to(device);
      torch::Tensor real_labels = torch::empty(n, device).uniform_(0.8, 1.0);
      torch::Tensor real_output =
          discriminate(*discriminator, real_images).reshape(real_labels.sizes());
      torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
      d_loss_real.backward();

      // Discriminator on generated images.
      torch::Tensor noise = torch::randn({n, kNoiseSize, 1, 1}, device);
      torch::Tensor fake_images = generate(*generator, noise);
      torch::Tensor fake_labels = torch::zeros(n, device);
      torch::Tensor fake_output =
          discriminate(*discriminator, fake_images.detach()).reshape(fake_labels.sizes());
      torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();

      torch::Tensor d_loss = d_loss_real + d_loss_fake;
      discriminator_optimizer.step();

      // Generator: make the discriminator call its images real.
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminate(*discriminator, fake_images).reshape(fake_labels.sizes());
      torch::Tensor g_loss = torch::nn::functional::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();

      ++batch_index;
      last_d_loss = d_loss.item<float>();
      last_g_loss = g_loss.item<float>();
      std::printf("[%3lld/%3lld] D_loss: %.4f | G_loss: %.4f\n",
                  static_cast<long long>(batch_index), static_cast<long long>(total_batches),
                  last_d_loss, last_g_loss);
      std::fflush(stdout);
      TORCH_CHECK(std::isfinite(last_d_loss) && std::isfinite(last_g_loss), "loss is not finite");
    }

    // Checkpoints, as the example writes them every kCheckpointEvery batches.
    torch::save(generator, "generator-checkpoint.pt");
    torch::save(generator_optimizer, "generator-optimizer-checkpoint.pt");
    torch::save(discriminator, "discriminator-checkpoint.pt");
    torch::save(discriminator_optimizer, "discriminator-optimizer-checkpoint.pt");
    {
      torch::NoGradGuard no_grad;
      generator->eval();
      torch::Tensor samples = generator->forward(torch::randn({8, kNoiseSize, 1, 1}, device));
      generator->train();
      TORCH_CHECK(samples.sizes() == torch::IntArrayRef({8, 1, 28, 28}), "bad sample shape ",
                  samples.sizes());
      torch::save((samples + 1.0) / 2.0, "dcgan-sample.pt");
    }

    // Restore into fresh objects, as the example does with kRestoreFromCheckpoint.
    DCGANGenerator restored(kNoiseSize);
    restored->to(device);
    torch::optim::Adam restored_optimizer(
        restored->parameters(), torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
    torch::load(restored, "generator-checkpoint.pt");
    torch::load(restored_optimizer, "generator-optimizer-checkpoint.pt");
    torch::nn::Sequential restored_discriminator = make_discriminator();
    torch::optim::Adam restored_discriminator_optimizer(
        restored_discriminator->parameters(),
        torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
    torch::load(restored_discriminator, "discriminator-checkpoint.pt");
    torch::load(restored_discriminator_optimizer, "discriminator-optimizer-checkpoint.pt");
    TORCH_CHECK(same_parameters(*generator, *restored), "restored generator differs");
    TORCH_CHECK(same_parameters(*discriminator, *restored_discriminator),
                "restored discriminator differs");

    torch::Tensor samples;
    torch::load(samples, "dcgan-sample.pt");
    TORCH_CHECK(samples.dim() == 4 && samples.min().item<float>() >= 0.0f &&
                    samples.max().item<float>() <= 1.0f,
                "bad saved samples");

    // One more generator step on the original and on the restored pair: with Adam's moments
    // restored, both land on the same parameters.
    if (batch_index > 0) {
      torch::Tensor noise = torch::randn({kBatchSize, kNoiseSize, 1, 1}, device);
      torch::Tensor loss_a = generator_step(generator, generator_optimizer, discriminator, noise);
      torch::Tensor loss_b = generator_step(restored, restored_optimizer, discriminator, noise);
      TORCH_CHECK(torch::allclose(loss_a, loss_b),
                  "restored generator gives another loss: ", loss_a.item<float>(), " vs ",
                  loss_b.item<float>());
      TORCH_CHECK(same_parameters(*generator, *restored),
                  "restored generator optimizer steps differently");
    }

    std::printf("RESULT d_loss=%.4f g_loss=%.4f\n", last_d_loss, last_g_loss);
  } catch (const c10::Error& e) {
    std::cerr << "dcgan: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
