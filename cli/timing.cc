#include "cli/timing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace graft::cli {

std::string FormatDuration(double seconds) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}};
  const double magnitude = std::fabs(seconds);
  const Unit* unit = nullptr;
  for (const Unit& u : kUnits) {
    // Switch units where three significant digits would round to 1000.
    if (magnitude < u.scale * 999.5) {
      unit = &u;
      break;
    }
  }
  if (unit == nullptr) {
    if (magnitude >= 999.5) return absl::StrFormat("%.0f s", seconds);
    return absl::StrFormat("%.3g s", seconds);
  }
  if (magnitude == 0) return "0 ns";
  return absl::StrFormat("%.3g %s", seconds / unit->scale, unit->name);
}

double Median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + mid, samples.end());
  if (samples.size() % 2 == 1) return samples[mid];
  const double upper = samples[mid];
  const double lower =
      *std::max_element(samples.begin(), samples.begin() + mid);
  return (lower + upper) / 2;
}

}  // namespace graft::cli
