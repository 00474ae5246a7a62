// Probes of the faults of work on streams (catalogue/streams.cc).
#include <string.h>

#include <initializer_list>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// wait_value64_eq_compares_low_word: "rc,width,value" of the wait that reached the driver.
int WaitValue64Eq() {
  auto wait64 = Get<CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned)>("cuStreamWaitValue64");
  auto wait_bits = static_cast<int*>(FakeSymbol("fake_last_wait_bits"));
  auto wait_value = static_cast<unsigned long long*>(FakeSymbol("fake_last_wait_value"));
  if (!wait64 || !wait_bits || !wait_value) return 1;
  static unsigned long long word = 0;
  const CUdeviceptr wp = reinterpret_cast<CUdeviceptr>(&word);
  auto waited = [&](unsigned flags) {
    *wait_bits = 0;
    CUresult r = wait64(kBlocking, wp, 0x100000005ull, flags);
    return std::to_string(r) + "," + std::to_string(*wait_bits) + "," + std::to_string(*wait_value);
  };
  printf("wait64_eq=%s wait64_eq_flush=%s wait64_geq=%s wait64_and=%s\n",
         waited(CU_STREAM_WAIT_VALUE_EQ).c_str(),
         waited(CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH).c_str(),
         waited(CU_STREAM_WAIT_VALUE_GEQ).c_str(), waited(CU_STREAM_WAIT_VALUE_AND).c_str());
  return 0;
}

// batch_memop_writes_hoisted_before_wait: "rc,operation kinds in the order the driver got them".
int BatchMemOpOrder() {
  auto batch =
      Get<CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned)>("cuStreamBatchMemOp");
  auto batch_ops = static_cast<char*>(FakeSymbol("fake_batch_ops"));
  if (!batch || !batch_ops) return 1;
  static unsigned long long words[4];
  auto batched = [&](std::initializer_list<CUstreamBatchMemOpType> kinds) {
    CUstreamBatchMemOpParams ops[8];
    memset(ops, 0, sizeof(ops));
    unsigned n = 0;
    for (CUstreamBatchMemOpType k : kinds) {
      ops[n].operation = k;
      if (k == CU_STREAM_MEM_OP_WAIT_VALUE_32 || k == CU_STREAM_MEM_OP_WAIT_VALUE_64) {
        ops[n].waitValue.address = reinterpret_cast<CUdeviceptr>(&words[0]);
        ops[n].waitValue.value64 = 1;
        ops[n].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
      } else {
        ops[n].writeValue.address = reinterpret_cast<CUdeviceptr>(&words[1 + n % 3]);
        ops[n].writeValue.value64 = 7;
      }
      ++n;
    }
    CUresult rc = batch(kBlocking, n, ops, 0);
    return std::to_string(rc) + "," + batch_ops;
  };
  printf("batch_wait_then_writes=%s batch_write_wait_write=%s batch_writes_then_wait=%s "
         "batch_writes_only=%s\n",
         batched({CU_STREAM_MEM_OP_WAIT_VALUE_64, CU_STREAM_MEM_OP_WRITE_VALUE_64,
                  CU_STREAM_MEM_OP_WRITE_VALUE_32}).c_str(),
         batched({CU_STREAM_MEM_OP_WRITE_VALUE_32, CU_STREAM_MEM_OP_WAIT_VALUE_32,
                  CU_STREAM_MEM_OP_WRITE_VALUE_64}).c_str(),
         batched({CU_STREAM_MEM_OP_WRITE_VALUE_64, CU_STREAM_MEM_OP_WAIT_VALUE_64}).c_str(),
         batched({CU_STREAM_MEM_OP_WRITE_VALUE_64, CU_STREAM_MEM_OP_WRITE_VALUE_32}).c_str());
  return 0;
}

// launch_beside_running_kernel_loses_last_block: "rc,grid width the driver got" of 4-block
// launches beside a kernel still running on kBlocking (both entry points), on its own stream and
// into a capture, and beside it once it has completed.
int LaunchBesideRunningKernel() {
  auto launch = Get<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void**, void**)>("cuLaunchKernel");
  auto launch_ex = Get<CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**)>("cuLaunchKernelEx");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto grid = static_cast<unsigned*>(FakeSymbol("fake_last_launch_grid_x"));
  auto pending = static_cast<void**>(FakeSymbol("fake_pending_event"));
  auto recorded = static_cast<void**>(FakeSymbol("fake_last_recorded_event"));
  if (!launch || !launch_ex || !set_current || !grid || !pending || !recorded) return 1;
  const CUfunction f = reinterpret_cast<CUfunction>(0xF00);
  auto launched = [&](CUstream s) {
    *grid = 0;
    CUresult rc = launch(f, 4, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
    return std::to_string(rc) + "," + std::to_string(*grid);
  };
  set_current(kContextA);
  *recorded = nullptr;
  printf("launch_first=%s", launched(kBlocking).c_str());
  *pending = *recorded;  // the kernel on kBlocking is still running (the shim's event, if any)
  printf(" launch_beside=%s", launched(kNonBlocking).c_str());
  printf(" launch_same_stream=%s", launched(kBlocking).c_str());
  CUlaunchConfig c;
  memset(&c, 0, sizeof(c));
  c.gridDimX = 4;
  c.gridDimY = c.gridDimZ = 1;
  c.blockDimX = 32;
  c.blockDimY = c.blockDimZ = 1;
  c.hStream = kNonBlocking;
  *grid = 0;
  CUresult rc = launch_ex(&c, f, nullptr, nullptr);
  printf(" launch_ex_beside=%d,%u", rc, *grid);
  printf(" launch_captured=%s", launched(kCapturing).c_str());
  *pending = nullptr;
  printf(" launch_after_completion=%s\n", launched(kNonBlocking).c_str());
  set_current(nullptr);
  return 0;
}

const Probe kProbes[] = {
    {"wait_value64_eq_compares_low_word", WaitValue64Eq},
    {"batch_memop_writes_hoisted_before_wait", BatchMemOpOrder},
    {"launch_beside_running_kernel_loses_last_block", LaunchBesideRunningKernel},
};

}  // namespace

extern const ProbeArea kStreamsProbes = Probes("streams", kProbes);

}  // namespace probes
