// Kernels of the mapped suite: memory-test passes over 32-bit words and pointer-linked lists,
// all through device pointers to mapped host memory. Launchers return the launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/mapped/linked_list.h"
#include "kernels/mapped/memtest_pattern.h"

namespace pagelock {

// w[i] = MemtestWord(pattern, i, param, address_base) for i < words.
cudaError_t LaunchMemtestFill(void* w, size_t words, MemtestPattern pattern, uint32_t param,
                              uint64_t address_base, cudaStream_t stream);

// Adds the words that differ from the pattern to out->mismatches and keeps the lowest
// (index << 32 | got) in out->first. The caller sets *out to {0, kNoMismatch} first; out must
// be device-accessible.
cudaError_t LaunchMemtestCheck(const void* w, size_t words, MemtestPattern pattern, uint32_t param,
                               uint64_t address_base, MemtestResult* out, cudaStream_t stream);

// One moving-inversions step: each word is read and checked against `expect` (mismatches into
// *out as above), then ~expect is written; each thread walks its words in ascending or
// descending index order.
cudaError_t LaunchMemtestInvert(void* w, size_t words, uint32_t expect, bool descending,
                                MemtestResult* out, cudaStream_t stream);

// One thread follows the list from `head` (a device-usable address), at most max_steps nodes:
// order[k] = index of the k-th node visited (order has max_steps slots), *out = what it found.
cudaError_t LaunchWalkList(const ListNode* head, size_t max_steps, uint64_t* order, ListWalk* out,
                           cudaStream_t stream);

// Builds a list over nodes[0..n) in the order given: node order[k] gets index order[k],
// value ListValue(order[k], seed) and next = the device address of node order[k + 1] (0 for the
// last). The head is node order[0].
cudaError_t LaunchBuildList(ListNode* nodes, const uint32_t* order, size_t n, uint64_t seed,
                            cudaStream_t stream);

}  // namespace pagelock
