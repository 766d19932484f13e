// PyTorch eager numbers, measured by bench/torch_eager.py in a subprocess with Debian's Python
// (python3-torch). It runs after Kiln's measurements, never concurrently, so the two OpenMP
// pools do not compete for the cores.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "bench/bench.h"

namespace kiln::bench {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

}  // namespace

std::string run_command(const std::string& command, int& status) {
  std::string output;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) {
    status = -1;
    return output;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe.get())) > 0) output.append(buf, n);
  status = pclose(pipe.release());
  return output;
}

TorchRefs torch_eager_refs(const std::string& script, const std::vector<std::string>& names) {
  int status = 0;
  run_command(std::string(kPython) + " -c 'import torch' >/dev/null 2>&1", status);
  if (status != 0) {
    std::cout << "PyTorch is not installed (" << kPython
              << " cannot import torch; scripts/install-bench-deps installs python3-torch): "
                 "the torch_eager references are omitted.\n";
    return {};
  }
  std::cout << "Measuring PyTorch eager (" << script << ") ...\n" << std::flush;
  std::string command =
      "OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 " + std::string(kPython) + " '" + script + "'";
  for (const std::string& name : names) command += " " + name;  // names are [a-z0-9_]
  std::string out = run_command(command, status);
  TorchRefs refs;
  auto json = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (status != 0 || !json.is_object() || !json.contains("results")) {
    std::cout << "torch_eager.py failed (exit status " << status << "); references omitted.\n";
    return refs;
  }
  refs.version = json.value("torch", "");
  for (auto& [name, value] : json["results"].items()) refs.results[name] = value.get<double>();
  return refs;
}

}  // namespace kiln::bench
