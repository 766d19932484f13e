// Where the numbers were measured: enough to tell two bench.json files apart.
#include <cblas.h>
#include <omp.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "bench/bench.h"

namespace kiln::bench {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

std::string utc_now() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

nlohmann::ordered_json machine_info() {
  return {
      {"cpu", cpu_model()},
      {"cores", std::thread::hardware_concurrency()},
      {"threads", omp_get_max_threads()},
      {"compiler", compiler()},
      {"blas", openblas_get_config()},
      {"date", utc_now()},
  };
}

}  // namespace kiln::bench
