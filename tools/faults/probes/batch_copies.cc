// Probes of the batch copy faults (catalogue/batch_copies.cc). The fake driver checks a batch's
// arguments as documented and performs its copies at once.
#include <stdint.h>
#include <string.h>

#include <vector>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

using Batch13 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*,
                             size_t*, size_t, CUstream);
using Batch12 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*,
                             size_t*, size_t, size_t*, CUstream);

CUmemcpyAttributes Order(CUmemcpySrcAccessOrder order) {
  CUmemcpyAttributes a;
  memset(&a, 0, sizeof(a));
  a.srcAccessOrder = order;
  return a;
}

// Copies between host buffers of the probe's own, their destinations zeroed first.
struct Copies {
  std::vector<std::vector<unsigned char>> src, dst;
  std::vector<CUdeviceptr> srcs, dsts;
  std::vector<size_t> sizes;
  explicit Copies(std::initializer_list<size_t> n) {
    for (size_t size : n) {
      src.emplace_back(size);
      dst.emplace_back(size, 0);
      for (size_t i = 0; i < size; ++i) src.back()[i] = static_cast<unsigned char>(i % 251 + 1);
      sizes.push_back(size);
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      srcs.push_back(reinterpret_cast<CUdeviceptr>(src[k].data()));
      dsts.push_back(reinterpret_cast<CUdeviceptr>(dst[k].data()));
    }
  }
  size_t Mismatches() const {
    size_t bad = 0;
    for (size_t k = 0; k < sizes.size(); ++k)
      for (size_t i = 0; i < sizes[k]; ++i) bad += dst[k][i] != src[k][i];
    return bad;
  }
};

// batch_last_copy_dropped_with_several_attrs: "rc,bytes not delivered" of three copies with two
// attribute entries (both entry points) and with one.
int LastCopyDropped() {
  auto batch13 = Get<Batch13>("cuMemcpyBatchAsync");
  auto batch12 = Get<Batch12>("cuMemcpyBatchAsync", 12080);
  if (!batch13 || !batch12) return 1;
  auto run = [&](std::vector<size_t> idxs, bool old_abi) {
    Copies c({256, 256, 256});
    std::vector<CUmemcpyAttributes> attrs(idxs.size(), Order(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM));
    size_t fail = 0;
    CUresult rc = old_abi ? batch12(c.dsts.data(), c.srcs.data(), c.sizes.data(), 3, attrs.data(),
                                    idxs.data(), idxs.size(), &fail, kBlocking)
                          : batch13(c.dsts.data(), c.srcs.data(), c.sizes.data(), 3, attrs.data(),
                                    idxs.data(), idxs.size(), kBlocking);
    return std::to_string(rc) + "," + std::to_string(c.Mismatches());
  };
  printf("batch_two_attrs=%s batch_two_attrs_12080=%s batch_last_attr_alone=%s batch_one_attr=%s\n",
         run({0, 2}, false).c_str(), run({0, 1}, true).c_str(), run({0, 2}, true).c_str(),
         run({0}, false).c_str());
  return 0;
}

// batch_large_entry_drops_partial_word: "rc,bytes not delivered" of one copy of each size.
int LargeEntry() {
  auto batch13 = Get<Batch13>("cuMemcpyBatchAsync");
  if (!batch13) return 1;
  auto run = [&](size_t n) {
    Copies c({n});
    CUmemcpyAttributes attr = Order(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    size_t idx = 0;
    CUresult rc = batch13(c.dsts.data(), c.srcs.data(), c.sizes.data(), 1, &attr, &idx, 1, kBlocking);
    return std::to_string(rc) + "," + std::to_string(c.Mismatches());
  };
  printf("batch_1mib_plus_13=%s batch_1mib_plus_16=%s batch_1001=%s\n",
         run((size_t{1} << 20) + 13).c_str(), run((size_t{1} << 20) + 16).c_str(),
         run(1001).c_str());
  return 0;
}

// batch_during_api_call_source_read_late: "rc,where the first copy the driver got reads from
// (own: the caller's source; other),the access order it got,host functions queued,bytes not
// delivered".
int DuringApiCallSources() {
  auto batch13 = Get<Batch13>("cuMemcpyBatchAsync");
  auto batch12 = Get<Batch12>("cuMemcpyBatchAsync", 12080);
  auto got_src = static_cast<uintptr_t*>(FakeSymbol("fake_last_batch_src0"));
  auto got_order = static_cast<int*>(FakeSymbol("fake_last_batch_order0"));
  auto host_funcs = static_cast<int*>(FakeSymbol("fake_host_funcs"));
  if (!batch13 || !batch12 || !got_src || !got_order || !host_funcs) return 1;
  auto run = [&](CUmemcpySrcAccessOrder order, bool device_source, bool old_abi) {
    Copies c({256});
    if (device_source) c.srcs[0] = reinterpret_cast<CUdeviceptr>(CopyDevice());
    memcpy(CopyDevice(), c.src[0].data(), 256);
    CUmemcpyAttributes attr = Order(order);
    size_t idx = 0, fail = 0;
    const int funcs = *host_funcs;
    CUresult rc = old_abi ? batch12(c.dsts.data(), c.srcs.data(), c.sizes.data(), 1, &attr, &idx, 1,
                                    &fail, kNonBlocking)
                          : batch13(c.dsts.data(), c.srcs.data(), c.sizes.data(), 1, &attr, &idx, 1,
                                    kNonBlocking);
    return std::to_string(rc) + "," + (*got_src == c.srcs[0] ? "own" : "other") + "," +
           std::to_string(*got_order) + "," + std::to_string(*host_funcs - funcs) + "," +
           std::to_string(c.Mismatches());
  };
  printf("batch_during_call_host=%s", run(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, false, false).c_str());
  printf(" batch_during_call_host_12080=%s",
         run(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, false, true).c_str());
  printf(" batch_during_call_device=%s", run(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, true, false).c_str());
  printf(" batch_stream_order_host=%s", run(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, false, false).c_str());
  printf(" batch_any_order_host=%s\n", run(CU_MEMCPY_SRC_ACCESS_ORDER_ANY, false, false).c_str());
  return 0;
}

// batch_fail_idx_off_by_one: "rc,failIdx" (max: SIZE_MAX) of refused batches through the 12.8
// entry point.
int FailIdx() {
  auto batch12 = Get<Batch12>("cuMemcpyBatchAsync", 12080);
  if (!batch12) return 1;
  auto run = [&](bool null_dst, CUmemcpySrcAccessOrder order, CUstream st) {
    Copies c({64, 64, 64});
    if (null_dst) c.dsts[1] = 0;
    std::vector<size_t> idxs = {0, 2};
    std::vector<CUmemcpyAttributes> attrs = {Order(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM), Order(order)};
    size_t fail = 7;
    CUresult rc = batch12(c.dsts.data(), c.srcs.data(), c.sizes.data(), 3, attrs.data(), idxs.data(),
                          2, &fail, st);
    return std::to_string(rc) + "," + (fail == SIZE_MAX ? std::string("max") : std::to_string(fail));
  };
  printf("batch_fail_null_dst=%s batch_fail_bad_order=%s batch_fail_legacy_stream=%s\n",
         run(true, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, kBlocking).c_str(),
         run(false, CU_MEMCPY_SRC_ACCESS_ORDER_INVALID, kBlocking).c_str(),
         run(false, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, CU_STREAM_LEGACY).c_str());
  return 0;
}

const Probe kProbes[] = {
    {"batch_last_copy_dropped_with_several_attrs", LastCopyDropped},
    {"batch_large_entry_drops_partial_word", LargeEntry},
    {"batch_during_api_call_source_read_late", DuringApiCallSources},
    {"batch_fail_idx_off_by_one", FailIdx},
};

}  // namespace

extern const ProbeArea kBatchCopiesProbes = Probes("batch_copies", kProbes);

}  // namespace probes
