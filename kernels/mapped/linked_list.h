// A node of the pointer-linked lists that one agent builds in mapped host memory and another
// walks (suites/mapped/pointer_structures_test.cc). `next` holds an address the walking agent
// can dereference (0 ends the list): on the device, the node's device alias; under unified
// addressing that is the host pointer itself for cudaHostAlloc'd memory.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PAGELOCK_LIST_HD __host__ __device__
#else
#define PAGELOCK_LIST_HD
#endif

namespace pagelock {

struct ListNode {
  uint64_t next;   // address of the next node as the walker dereferences it; 0 at the end
  uint64_t value;  // ListValue(index, seed)
  uint64_t index;  // the node's slot in the array
};

PAGELOCK_LIST_HD inline uint64_t ListValue(uint64_t index, uint64_t seed) {
  uint64_t z = index + seed * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  return z ^ (z >> 27);
}

// What a walk found: the number of nodes visited, the sum of their values, and whether it
// reached a null link within its step limit.
struct ListWalk {
  unsigned long long steps;
  unsigned long long sum;
  unsigned long long ended;  // 1: reached next == 0; 0: stopped at the step limit
};

}  // namespace pagelock
