// nvbandwidth's way of timing copies (memcpy.cpp, doMemcpyCore), for the bandwidth cases outside
// bandwidth_test.cc: every lane's stream is held by a kernel waiting on a host flag while its
// warm-up copies, the start event (lane 0's; every other lane's stream waits for it, then records
// its own), the timed copies and an end event are queued; then the flag is released, so the
// events time the copies alone and every lane starts at once. GB/s per lane and sample is bytes x
// loops / elapsed; the figure is the median of the samples. Hooks run before each sample (rewrite
// the sources, poison the destinations) and after it (count every byte), so every sample's copies
// are verified.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "fixtures/device_caps.h"
#include "fixtures/resources.h"

namespace pagelock {
namespace bandwidth {

// One timed stream: `op(stream)` enqueues one copy of `bytes`; one GB/s figure per sample.
struct Lane {
  cudaStream_t stream = nullptr;
  std::function<cudaError_t(cudaStream_t)> op;
  size_t bytes = 0;
  std::vector<double> gbps;
};

// Copies per sample and samples. nvbandwidth v0.8: 4 warm-up and 16 timed copies, 3 samples.
struct Method {
  int warmup = 4;
  int loops = 16;
  int samples = 3;
};
inline constexpr Method kNvbandwidth{4, 16, 3};
// The full tier's short form: the same shape, fewer copies of smaller buffers.
inline constexpr Method kQuick{1, 4, 3};

class LaneMeter {
 public:
  // Allocates the hold's mapped host words (in the fixture's SetUp, after the device check);
  // returns the allocation's result.
  cudaError_t Init();

  // Times `lanes` together (all on the current device). before(s) runs before sample s is
  // queued, after(s) once it completed. A holding kernel that saw no flag fails the case.
  void Measure(const std::vector<Lane*>& lanes, const Method& m,
               const std::function<void(int)>& before = {}, const std::function<void(int)>& after = {});

  // Releases the hold (TearDown: never leave a stream held).
  void Release();
  // Frees the hold's words (TearDown, before the kit's check for leaked pinned memory).
  cudaError_t Free() { return flag_.Free(); }

 private:
  PinnedBuffer flag_;  // [0] hold flag, [1] holding kernel status
};

double Median(std::vector<double> v);
// "55.1 55.3 55.2 " (the samples, for an observation).
std::string Samples(const std::vector<double>& v);

// The link limit of a device, one direction, GB/s: its maximum generation and width (an idle
// link trains down), else the current ones; 0 when unknown. *basis says which and from where.
double LinkLimitGBps(const DeviceInfo& d, std::string* basis);

}  // namespace bandwidth
}  // namespace pagelock
