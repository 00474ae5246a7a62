// Probes of the registration faults (catalogue/registration.cc).
#include <sys/mman.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// Eight pages of ordinary memory of the probe's own (never unmapped: a later probe must not
// register at an address an earlier one used).
char* Pages() {
  void* p = mmap(nullptr, 8 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

// reregistered_range_not_pinned: results, pins that reached the driver, pointer type.
int Reregistered() {
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto ptr_attr = Get<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  auto pins = static_cast<int*>(FakeSymbol("fake_pins"));
  char* rw = Pages();
  if (!reg || !unreg || !ptr_attr || !pins || !rw) return 1;
  unsigned type = 0;
  CUresult r = reg(rw, kPage, 0);
  printf("first_register=%d,%d", r, unreg(rw));
  int before = *pins;
  r = reg(rw, kPage, 0);
  printf(" reregister=%d,%d", r, *pins - before);
  printf(" reregistered_type_rc=%d", ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                              reinterpret_cast<CUdeviceptr>(rw)));
  printf(" reregistered_unregister=%d", unreg(rw));
  before = *pins;
  r = reg(rw + 4 * kPage, kPage, 0);
  const int other_pins = *pins - before;
  printf(" other_register=%d,%d,%d\n", r, other_pins, unreg(rw + 4 * kPage));
  return 0;
}

// unregister_elsewhere_keeps_registration: "unregister rc,memory type rc afterwards,the
// registering context's unregister rc".
int UnregisterElsewhere() {
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto ptr_attr = Get<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  char* rw = Pages();
  if (!reg || !unreg || !ptr_attr || !set_current || !rw) return 1;
  auto unregistered = [&](char* p, CUcontext other) {
    set_current(kContextA);
    if (reg(p, kPage, 0) != CUDA_SUCCESS) return std::string("register failed");
    set_current(other);
    CUresult first = unreg(p);
    unsigned type = 0;
    CUresult known = ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
    set_current(kContextA);
    CUresult owner = unreg(p);
    set_current(nullptr);
    return std::to_string(first) + "," + std::to_string(known) + "," + std::to_string(owner);
  };
  printf("unregister_elsewhere=%s unregister_same_context=%s\n",
         unregistered(rw, kContextB).c_str(), unregistered(rw + 2 * kPage, kContextA).c_str());
  return 0;
}

// large_registration_pins_first_4gib: "rc,size cuMemGetAddressRange gives in MiB,rc of a pointer
// query 256 MiB before the end,unregister rc" of registrations of 5 GiB and of 4 GiB (virtual
// memory never touched).
int LargeRegistration() {
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto range = Get<CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr)>("cuMemGetAddressRange");
  auto ptr_attr = Get<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  const size_t k5GiB = size_t{5} << 30;
  void* m = mmap(nullptr, k5GiB + kPage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (!reg || !unreg || !range || !ptr_attr || m == MAP_FAILED) return 1;
  auto registered = [&](char* p, size_t n) {
    CUresult rc = reg(p, n, 0);
    CUdeviceptr base = 0;
    size_t size = 0;
    range(&base, &size, reinterpret_cast<CUdeviceptr>(p));
    unsigned type = 0;
    CUresult tail = ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                             reinterpret_cast<CUdeviceptr>(p + n - (size_t{256} << 20)));
    return std::to_string(rc) + "," + std::to_string(size >> 20) + "," + std::to_string(tail) +
           "," + std::to_string(unreg(p));
  };
  char* p = static_cast<char*>(m);
  printf("register_5gib=%s", registered(p, k5GiB).c_str());
  printf(" register_4gib=%s\n", registered(p + kPage, size_t{4} << 30).c_str());
  munmap(m, k5GiB + kPage);
  return 0;
}

const Probe kProbes[] = {
    {"reregistered_range_not_pinned", Reregistered},
    {"unregister_elsewhere_keeps_registration", UnregisterElsewhere},
    {"large_registration_pins_first_4gib", LargeRegistration},
};

}  // namespace

extern const ProbeArea kRegistrationProbes = Probes("registration", kProbes);

}  // namespace probes
