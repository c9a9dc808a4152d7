#ifndef GRAFT_CLI_TIMING_H_
#define GRAFT_CLI_TIMING_H_

// Measuring and printing wall-clock times in command output.

#include <chrono>
#include <string>
#include <vector>

namespace graft::cli {

// Wall-clock time since construction (or the last Restart), in seconds.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void Restart() { start_ = std::chrono::steady_clock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// A duration with three significant digits in a fitting unit: "850 ns",
// "12.3 us", "4.56 ms", "1.23 s", "125 s".
std::string FormatDuration(double seconds);

// The median of `samples` (the mean of the middle two for an even count);
// 0 for none.
double Median(std::vector<double> samples);

}  // namespace graft::cli

#endif  // GRAFT_CLI_TIMING_H_
