// Probes of the pointer query faults (catalogue/pointer_attributes.cc).
#include <sys/mman.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// attributes_page_granular_for_subpage_registration: "rc,type,host pointer,device pointer,
// range start" (pointers as offsets from the page; the single-attribute rc beside).
int SubpageRegistrationAttributes() {
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto ptr_attr = Get<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  auto ptr_attrs =
      Get<CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr)>("cuPointerGetAttributes");
  if (!reg || !unreg || !ptr_attr || !ptr_attrs) return 1;
  void* pages = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return 1;
  char* sub = static_cast<char*>(pages);
  if (reg(sub + 100, 200, 0) != CUDA_SUCCESS) return 1;
  auto described = [&](char* p) {
    unsigned type = 7;
    void* host = reinterpret_cast<void*>(1);
    CUdeviceptr dev_ptr = 1, start = 1;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
    void* data[] = {&type, &host, &dev_ptr, &start};
    CUresult rc = ptr_attrs(4, which, data, reinterpret_cast<CUdeviceptr>(p));
    const CUdeviceptr base = reinterpret_cast<CUdeviceptr>(sub);
    auto off = [&](CUdeviceptr x) {
      return x ? std::to_string(static_cast<long long>(x - base)) : std::string("null");
    };
    unsigned single_type = 0;
    CUresult single = ptr_attr(&single_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
    return std::to_string(rc) + "," + std::to_string(type) + "," + off(reinterpret_cast<CUdeviceptr>(host)) +
           "," + off(dev_ptr) + "," + off(start) + "," + std::to_string(single);
  };
  printf("attrs_beside_subpage=%s attrs_inside_subpage=%s attrs_next_page=%s\n",
         described(sub + 1000).c_str(), described(sub + 150).c_str(), described(sub + kPage + 10).c_str());
  unreg(sub + 100);
  return 0;
}

const Probe kProbes[] = {
    {"attributes_page_granular_for_subpage_registration", SubpageRegistrationAttributes},
};

}  // namespace

extern const ProbeArea kPointerAttributesProbes = Probes("pointer_attributes", kProbes);

}  // namespace probes
