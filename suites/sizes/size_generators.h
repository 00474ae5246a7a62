// RapidCheck generators of the size property (fixtures/generators.h stays as it is):
//   LogSize    1 byte to 4 GiB, log-uniform (as many cases under 4 KiB as between 1 and 4 GiB);
//              it shrinks towards 1 byte
//   SizeRoute  how the memory is had (a PinRoute and its flags): cudaHostAlloc with any of its 8
//              flag combinations, cudaMallocHost, or cudaHostRegister of an anonymous mmap with
//              any of its Portable/Mapped combinations
// Both show themselves readably, so a shrunk counterexample can be read and replayed.
#pragma once

#include <cuda_runtime_api.h>
#include <rapidcheck.h>

#include <cmath>
#include <cstddef>
#include <ostream>

#include "fixtures/flags.h"
#include "fixtures/host_kinds.h"

namespace pagelock {
namespace sizes {

constexpr size_t kMaxPropertySize = size_t{4} << 30;

struct LogSize {
  size_t bytes = 1;
};

// A route (fixtures/host_kinds.h): cudaHostAlloc, cudaMallocHost, or cudaHostRegister of an
// anonymous mmap; with its flags.
struct SizeRoute {
  PinRoute route = PinRoute::kMallocHost;
  unsigned flags = 0;  // cudaHostAlloc flags, or cudaHostRegister flags
  bool mapped() const {
    return (route == PinRoute::kHostAlloc && (flags & cudaHostAllocMapped)) ||
           (route == PinRoute::kHostRegister && (flags & cudaHostRegisterMapped));
  }
  bool write_combined() const { return route == PinRoute::kHostAlloc && (flags & cudaHostAllocWriteCombined); }
};

inline void showValue(const LogSize& s, std::ostream& os) { os << "LogSize{" << s.bytes << "}"; }
inline void showValue(const SizeRoute& r, std::ostream& os) {
  switch (r.route) {
    case PinRoute::kHostAlloc: os << "cudaHostAlloc{" << HostAllocFlagsName(r.flags) << "}"; break;
    case PinRoute::kMallocHost: os << "cudaMallocHost{}"; break;
    case PinRoute::kHostRegister: os << "cudaHostRegister(mmap){" << HostRegisterFlagsName(r.flags) << "}"; break;
    default: os << PinRouteName(r.route) << "{}"; break;
  }
}

namespace gen {

// exp(u / 2^20 * ln(max)) for u uniform in [0, 2^20]: log-uniform in [1, max]; u shrinks to 0,
// the size to 1 byte.
inline rc::Gen<size_t> LogUniformSize(size_t max) {
  constexpr uint32_t kSteps = 1u << 20;
  return rc::gen::map(rc::gen::inRange<uint32_t>(0, kSteps + 1), [max](uint32_t u) {
    const double v = std::exp(std::log(static_cast<double>(max)) * u / kSteps);
    const size_t s = static_cast<size_t>(std::llround(v));
    return s < 1 ? size_t{1} : (s > max ? max : s);
  });
}

}  // namespace gen
}  // namespace sizes
}  // namespace pagelock

namespace rc {

template <>
struct Arbitrary<pagelock::sizes::LogSize> {
  static Gen<pagelock::sizes::LogSize> arbitrary() {
    return gen::map(pagelock::sizes::gen::LogUniformSize(pagelock::sizes::kMaxPropertySize),
                    [](size_t v) { return pagelock::sizes::LogSize{v}; });
  }
};

template <>
struct Arbitrary<pagelock::sizes::SizeRoute> {
  static Gen<pagelock::sizes::SizeRoute> arbitrary() {
    using pagelock::PinRoute;
    using pagelock::sizes::SizeRoute;
    return gen::oneOf(
        gen::map(gen::inRange(0u, 8u), [](unsigned f) { return SizeRoute{PinRoute::kHostAlloc, f}; }),
        gen::just(SizeRoute{PinRoute::kMallocHost, 0}),
        gen::map(gen::inRange(0u, 4u), [](unsigned f) { return SizeRoute{PinRoute::kHostRegister, f}; }));
  }
};

}  // namespace rc
