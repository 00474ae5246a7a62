// Host memory through the CUDA virtual memory management API (cuMemCreate at a host location,
// cuMemAddressReserve, cuMemMap, cuMemSetAccess): what the vmm suite's cases share. The host
// locations (CU_MEM_LOCATION_TYPE_HOST, HOST_NUMA) and their attributes are in CUDA 13.0's
// headers; built against older ones every case is NotSupported naming CUDA_VERSION.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fixtures/driver_api.h"

#if CUDA_VERSION >= 13000
#define PAGELOCK_HOST_VMM 1
#endif

namespace pagelock {
namespace vmm {

// "" when this build has the host locations, else the reason naming CUDA_VERSION.
std::string HeaderUnsupported();

#ifdef PAGELOCK_HOST_VMM

// The names the cases use for a host location.
std::string LocationName(CUmemLocationType type);

// Why device 0 cannot hold VMM allocations at `type` ("" when it can): the attribute that says
// so and its value (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, then
// HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED or HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
// and with `posix_fd` HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED).
std::string DeviceUnsupported(const DriverApi& d, CUmemLocationType type, bool posix_fd);

// CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID of device 0, or 0 where it is -1: cuMemCreate, "On systems
// where NUMA is not available CUmemLocation::id must be set to 0".
int HostNumaIdOrZero(const DriverApi& d);

// A pinned allocation's properties at a host location; `posix_fd` requests the POSIX file
// descriptor handle type.
CUmemAllocationProp HostProp(CUmemLocationType type, int id, bool posix_fd = false);

// CU_MEM_ALLOC_GRANULARITY_MINIMUM of `prop` (0 and *r set on failure).
size_t Granularity(const DriverApi& d, const CUmemAllocationProp& prop, CUresult* r);

// A handle, its address reservation and its mapping. Release() undoes them in the documented
// order (cuMemUnmap, cuMemAddressFree, cuMemRelease) and returns the first failure; the
// destructor releases what is left and reports a failed step as a non-fatal test failure.
class Mapping {
 public:
  explicit Mapping(const DriverApi& d) : d_(&d) {}
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  // cuMemCreate(size, prop, 0), then Map(). *step names the call that failed.
  CUresult Create(const CUmemAllocationProp& prop, size_t size, std::string* step);
  // Takes over `handle` (an allocation of `size` bytes: created or imported) and maps it at a
  // fresh reservation (cuMemAddressReserve, cuMemMap).
  CUresult MapHandle(CUmemGenericAllocationHandle handle, size_t size, std::string* step);
  // cuMemSetAccess of the whole mapping for one location.
  CUresult SetAccess(CUmemLocationType type, int id, CUmemAccess_flags flags);
  // cuMemGetAccess for one location at the mapping's start.
  CUresult GetAccess(CUmemLocationType type, int id, unsigned long long* flags) const;

  CUresult Unmap();          // cuMemUnmap of the whole mapping; the reservation stays
  CUresult FreeAddress();    // cuMemAddressFree of the reservation
  CUresult ReleaseHandle();  // cuMemRelease of the handle; a mapping stays usable
  CUresult Release();        // all three that are still held, in that order

  // Maps a handle again at the reservation this owner still holds (after Unmap()).
  CUresult Remap(CUmemGenericAllocationHandle handle);

  unsigned char* ptr() const { return reinterpret_cast<unsigned char*>(static_cast<uintptr_t>(va_)); }
  CUdeviceptr va() const { return va_; }
  size_t size() const { return size_; }
  CUmemGenericAllocationHandle handle() const { return handle_; }

 private:
  const DriverApi* d_;
  CUmemGenericAllocationHandle handle_ = 0;
  CUdeviceptr va_ = 0;
  size_t size_ = 0;
  bool has_handle_ = false, reserved_ = false, mapped_ = false;
};

#endif  // PAGELOCK_HOST_VMM

}  // namespace vmm
}  // namespace pagelock
