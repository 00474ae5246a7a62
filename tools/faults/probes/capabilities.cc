// Probes of the capability faults (catalogue/capabilities.cc).
#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// partial_host_atomics_claimed_without_ops: attributes 86 and 147, without and with native
// host atomics.
int PartialHostAtomics() {
  auto dev_attr = Get<CUresult (*)(int*, int, int)>("cuDeviceGetAttribute");
  auto no_native = static_cast<int*>(FakeSymbol("fake_no_native_atomics"));
  if (!dev_attr || !no_native) return 1;
  int a86 = -1, a147 = -1;
  *no_native = 1;
  dev_attr(&a86, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  dev_attr(&a147, CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  printf("atomics_none=%d,%d", a86, a147);
  *no_native = 0;
  dev_attr(&a86, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  dev_attr(&a147, CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  printf(" atomics_native=%d,%d\n", a86, a147);
  return 0;
}

const Probe kProbes[] = {
    {"partial_host_atomics_claimed_without_ops", PartialHostAtomics},
};

}  // namespace

extern const ProbeArea kCapabilitiesProbes = Probes("capabilities", kProbes);

}  // namespace probes
