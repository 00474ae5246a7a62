// Reference model of the pinned-memory API (what the documentation promises, R21-R36, R51-R58,
// R71, R72) and RapidCheck state-machine commands that drive a PinnedApi with random sequences of
// alloc, free, register (overlapping, adjacent, sub-page), unregister (base, interior, unknown),
// device-pointer, flag and attribute queries, kernel round trips and async copies. Every step
// compares the API's answer with the model's. A failing sequence shrinks to the shortest one, and
// each command shows itself as a C++ statement, so the counterexample is a snippet that replays it
// (with std::vector<void*> alloc; std::vector<unsigned char*> buf; cudaError_t r; void* d;
// unsigned f; cudaPointerAttributes a; RoundTripThroughDevicePointer and AsyncCopyRoundTrip as in
// real_api.cc); the failure message names the step and what the model expected.
#pragma once

#include <cuda_runtime_api.h>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "suites/model/pinned_api.h"

namespace pagelock {

// Rules of the model that a test can flip to check that the state machine catches a wrong one.
struct ModelRules {
  bool overlapping_register_fails = true;    // R30/R31: 712 on any byte overlap
  bool interior_unregister_is_invalid = true;  // R34: InvalidValue, not 713
  // R52: pageable memory has no device alias. Only where attr 88 (PageableMemoryAccess) = 0.
  bool pageable_has_no_device_pointer = true;
  // Known driver deviations the model excuses and counts (the real test asks
  // fixtures/deviations.h; the default is the documented rule, checked strictly).
  bool excuse_r56_portable = false;  // GetFlags may report another allocation's Portable bit
  bool excuse_r58 = false;           // GetFlags may succeed on registered memory
};

// What one sequence ran: its steps and the mismatches each excused deviation let pass.
struct ModelRun {
  uint64_t steps = 0;
  uint64_t excused_r56_portable = 0;
  uint64_t excused_r58 = 0;
};

struct ModelAlloc {
  size_t size;
  unsigned flags;
  bool live;
};
struct ModelBuffer {
  size_t size;
};
struct ModelReg {
  int buffer;
  size_t offset, length;
  unsigned flags;
};

struct ApiModel {
  ModelRules rules;
  std::vector<ModelAlloc> allocs;
  std::vector<ModelBuffer> buffers;
  std::vector<ModelReg> regs;  // live registrations

  // The live registration holding byte `offset` of `buffer`, or -1.
  int RegAt(int buffer, size_t offset) const;
  // A byte outside every registration but on a page a registration pins: what queries answer
  // there is not documented (page or byte granularity), so the model asks nothing about it.
  bool Ambiguous(int buffer, size_t offset) const;
  // [offset, offset + length) shares a page, but no byte, with a live registration: whether that
  // registers is open (R32 is an observation: per byte on r580, per page on a conforming driver),
  // so the model never generates it; hostregister_test records which one a driver does.
  bool SharesAPageOnly(int buffer, size_t offset, size_t length) const;
  cudaError_t ExpectRegister(int buffer, size_t offset, size_t length) const;
  cudaError_t ExpectUnregister(int buffer, size_t offset) const;
  bool AnyLiveAlloc() const;
};

// The system under test: the API plus the pointers the model's handles stand for. Releases
// everything still live when the sequence ends, so the health check sees no leak.
struct PinnedSut {
  explicit PinnedSut(PinnedApi* a) : api(a) {}
  ~PinnedSut();
  PinnedSut(const PinnedSut&) = delete;
  PinnedSut& operator=(const PinnedSut&) = delete;
  PinnedApi* api;
  std::vector<void*> allocs;           // parallel to ApiModel::allocs (null once freed)
  std::vector<unsigned char*> bufs;    // parallel to ApiModel::buffers
  std::vector<void*> registered;       // live registrations, for the final cleanup
  ModelRun run;                        // commands run, mismatches excused
};

using PinnedCommand = rc::state::Command<ApiModel, PinnedSut>;

// Runs one random command sequence against `api` (call inside a RapidCheck property).
ModelRun RunPinnedApiStateMachine(PinnedApi& api, const ModelRules& rules);

}  // namespace pagelock
