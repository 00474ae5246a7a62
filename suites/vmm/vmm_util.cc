#include "suites/vmm/vmm_util.h"

#include <gtest/gtest.h>

#include "fixtures/cuda_check.h"

namespace pagelock {
namespace vmm {

std::string HeaderUnsupported() {
#ifdef PAGELOCK_HOST_VMM
  return "";
#else
  return "VMM host locations (CU_MEM_LOCATION_TYPE_HOST, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) "
         "need CUDA headers >= 13.0; built with CUDA_VERSION=" +
         std::to_string(CUDA_VERSION);
#endif
}

#ifdef PAGELOCK_HOST_VMM

namespace {

// "<name>=<value> (need 1) on device 0" when the attribute is not 1, else "".
std::string NeedAttr(const DriverApi& d, CUdevice dev, CUdevice_attribute a, const char* name) {
  int v = -1;
  const CUresult r = d.cuDeviceGetAttribute(&v, a, dev);
  if (r != CUDA_SUCCESS) return std::string(name) + " query failed: " + CuName(r);
  return v == 1 ? "" : std::string(name) + "=" + std::to_string(v) + " (need 1) on device 0";
}

}  // namespace

std::string LocationName(CUmemLocationType type) {
  switch (type) {
    case CU_MEM_LOCATION_TYPE_HOST: return "Host";
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return "HostNuma";
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return "HostNumaCurrent";
    case CU_MEM_LOCATION_TYPE_DEVICE: return "Device";
    default: return "Location" + std::to_string(static_cast<int>(type));
  }
}

std::string DeviceUnsupported(const DriverApi& d, CUmemLocationType type, bool posix_fd) {
  CUdevice dev = 0;
  const CUresult r = d.cuDeviceGet(&dev, 0);
  if (r != CUDA_SUCCESS) return "cuDeviceGet(0): " + CuName(r);
  std::string why = NeedAttr(d, dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                             "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  if (!why.empty()) return why;
  why = type == CU_MEM_LOCATION_TYPE_HOST
            ? NeedAttr(d, dev, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                       "CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED")
            : NeedAttr(d, dev, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                       "CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  if (!why.empty() || !posix_fd) return why;
  return NeedAttr(d, dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                  "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED");
}

int HostNumaIdOrZero(const DriverApi& d) {
  CUdevice dev = 0;
  int id = -1;
  if (d.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) != CUDA_SUCCESS) {
    return 0;
  }
  return id < 0 ? 0 : id;
}

CUmemAllocationProp HostProp(CUmemLocationType type, int id, bool posix_fd) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.requestedHandleTypes = posix_fd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  p.location.type = type;
  p.location.id = id;
  return p;
}

size_t Granularity(const DriverApi& d, const CUmemAllocationProp& prop, CUresult* r) {
  size_t g = 0;
  *r = d.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  return *r == CUDA_SUCCESS ? g : 0;
}

Mapping::~Mapping() {
  const CUresult r = Release();
  if (r != CUDA_SUCCESS) ADD_FAILURE() << "releasing a VMM mapping in a destructor returned " << DescribeCu(r);
}

CUresult Mapping::Create(const CUmemAllocationProp& prop, size_t size, std::string* step) {
  CUmemGenericAllocationHandle h = 0;
  const CUresult r = d_->cuMemCreate(&h, size, &prop, 0);
  if (r != CUDA_SUCCESS) {
    *step = "cuMemCreate";
    return r;
  }
  return MapHandle(h, size, step);
}

CUresult Mapping::MapHandle(CUmemGenericAllocationHandle handle, size_t size, std::string* step) {
  handle_ = handle;
  has_handle_ = true;
  size_ = size;
  CUresult r = d_->cuMemAddressReserve(&va_, size, 0, 0, 0);
  if (r != CUDA_SUCCESS) {
    *step = "cuMemAddressReserve";
    return r;
  }
  reserved_ = true;
  r = d_->cuMemMap(va_, size, 0, handle_, 0);
  if (r != CUDA_SUCCESS) {
    *step = "cuMemMap";
    return r;
  }
  mapped_ = true;
  return CUDA_SUCCESS;
}

CUresult Mapping::Remap(CUmemGenericAllocationHandle handle) {
  const CUresult r = d_->cuMemMap(va_, size_, 0, handle, 0);
  if (r == CUDA_SUCCESS) mapped_ = true;
  return r;
}

CUresult Mapping::SetAccess(CUmemLocationType type, int id, CUmemAccess_flags flags) {
  CUmemAccessDesc desc{};
  desc.location.type = type;
  desc.location.id = id;
  desc.flags = flags;
  return d_->cuMemSetAccess(va_, size_, &desc, 1);
}

CUresult Mapping::GetAccess(CUmemLocationType type, int id, unsigned long long* flags) const {
  CUmemLocation loc{};
  loc.type = type;
  loc.id = id;
  return d_->cuMemGetAccess(flags, &loc, va_);
}

CUresult Mapping::Unmap() {
  if (!mapped_) return CUDA_SUCCESS;
  mapped_ = false;
  return d_->cuMemUnmap(va_, size_);
}

CUresult Mapping::FreeAddress() {
  if (!reserved_) return CUDA_SUCCESS;
  reserved_ = false;
  return d_->cuMemAddressFree(va_, size_);
}

CUresult Mapping::ReleaseHandle() {
  if (!has_handle_) return CUDA_SUCCESS;
  has_handle_ = false;
  return d_->cuMemRelease(handle_);
}

CUresult Mapping::Release() {
  const CUresult a = Unmap();
  const CUresult b = FreeAddress();
  const CUresult c = ReleaseHandle();
  return a != CUDA_SUCCESS ? a : b != CUDA_SUCCESS ? b : c;
}

#endif  // PAGELOCK_HOST_VMM

}  // namespace vmm
}  // namespace pagelock
