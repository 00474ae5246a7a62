#include "suites/interior/subjects.h"

namespace pagelock {
namespace interior {

std::string SubjectName(HostKind k) {
  static const Spelling<HostKind> kCaseName(HostKindName, {{HostKind::kDevice, "DeviceMemory"}});
  return kCaseName(k);
}

std::vector<HostKind> Subjects() {
  std::vector<HostKind> v = AllocatedAndRegisteredKinds();
  v.push_back(HostKind::kDevice);
  return v;
}

std::unique_ptr<KindBuffer> MakeSubject(HostKind k, size_t bytes, std::string* why) {
  KindOptions o;
  // Unregistered pages of the same mapping on each side, so probes outside read memory that
  // exists and is no one's registration.
  o.guard_pages = true;
  return KindBuffer::Make(k, bytes, why, o);
}

}  // namespace interior
}  // namespace pagelock
