// Property (H4): a random DAG of work over 2-4 buffers (page-locked mapped, registered mapped,
// device) on 2-4 streams of mixed kinds (blocking, non-blocking, the per-thread default stream)
// delivers exactly the bytes of a host model that runs the same steps one after another.
//   Steps: async copies (H2D, D2H, D2D), memsets, kernels that add a constant or copy with
//   a twist (through the device alias of mapped host memory, too), host writes, delays,
//   cudaEventRecord + cudaStreamWaitEvent edges and host waits on events.
//   Only determined DAGs run: before a step is issued, every earlier step that touches the same
//   bytes (one of the two writing) must happen before it (stream order, waited events, host
//   waits). A step that the random edges leave unordered gets the missing edges first: an event
//   recorded now on the other step's stream and waited on (by the step's stream, or by the host
//   for a host write). Issue order is then a topological order, so the model applies the steps
//   in issue order.
//   The buffers are compared with the model at every host wait (those whose writers the host
//   knows complete) and all of them at the end.
// A driver that reports an event complete early (the host check or a host write races the
// work), drops a cross-stream wait (the consumer reads before the producer, delayed, wrote) or
// reorders work in a stream fails it; the failure prints the shrunk DAG, step by step.
// Budget: RapidCheck's 100 cases, buffers <= 256 KiB, <= 24 random steps (plus the edges they
// need), 30 us delays; waits bounded (10 s scaled by PAGELOCK_TIME_SCALE). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <bitset>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/generators.h"
#include "fixtures/gpu_property.h"
#include "kernels/pattern.h"
#include "kernels/streams/dag_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {


constexpr size_t kMaxBytes = size_t{256} << 10;
constexpr int kMaxSteps = 24;
constexpr double kWaitS = 10;      // scaled by PollEvent/PollStream
constexpr double kDelayMs = 0.03;  // a producer slow enough for a dropped wait to show

enum class Op { kCopy, kAdd, kTwist, kMemset, kHostWrite, kDelay, kRecord, kWait, kHostWait };
using Steps = std::bitset<kMaxSteps>;  // a set of issued steps (by issue index)

struct Access {
  int step, buf;
  size_t off, len;
  bool write;
};

bool Overlap(const Access& a, const Access& b) {
  return a.buf == b.buf && a.off < b.off + b.len && b.off < a.off + a.len && (a.write || b.write);
}

class StreamDagProperty : public GpuProperty {};

// One case: the buffers, streams and events, what each stream and the host know has happened,
// and the model.
class Dag {
 public:
  Dag(size_t n, std::vector<std::unique_ptr<KindBuffer>> bufs, std::vector<std::unique_ptr<KindStream>> ss,
      cudaStream_t check)
      : n_(n), bufs_(std::move(bufs)), streams_(std::move(ss)), check_(check), frontier_(streams_.size()) {
    model_.assign(bufs_.size(), std::vector<unsigned char>(n_));
  }
  // A failed case ends early: its work drains (bounded) before the buffers are released.
  ~Dag() {
    for (int s = 0; s < stream_count(); ++s) (void)streams::PollStream(S(s), kWaitS);
  }

  size_t size() const { return n_; }
  int buffers() const { return static_cast<int>(bufs_.size()); }
  int stream_count() const { return static_cast<int>(streams_.size()); }
  bool on_host(int b) const { return bufs_[b]->host() != nullptr; }
  int steps() const { return static_cast<int>(stream_of_.size()); }
  const std::vector<int>& recorded() const { return recorded_events_; }
  std::string trace() const { return trace_.str(); }

  // Initial bytes: a pattern per buffer, written by the host (device buffers by a copy).
  void Fill(uint32_t seed) {
    for (int b = 0; b < buffers(); ++b) {
      for (size_t i = 0; i < n_; ++i) model_[b][i] = PatternByte(i, seed + 977u * b);
      if (on_host(b)) {
        std::memcpy(bufs_[b]->host(), model_[b].data(), n_);
      } else {
        // copy-check: the buffer is compared with the model at the end
        RC_ASSERT(cudaMemcpy(bufs_[b]->dev(), model_[b].data(), n_, cudaMemcpyHostToDevice) == cudaSuccess);
      }
    }
    RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  }

  // Orders the accesses after every earlier conflicting step, adding edges where needed.
  // stream < 0: a host step. Returns the new step's index.
  int Issue(int stream, const std::vector<Access>& acc) {
    RC_ASSERT(steps() < kMaxSteps);
    const int me = steps();
    Steps before = Known(stream);
    std::vector<bool> need(streams_.size(), false);
    for (const Access& a : accesses_) {
      for (const Access& b : acc) {
        // A host step is in `before` already: everything issued after it follows it.
        if (Overlap(a, b) && !before.test(a.step) && stream_of_[a.step] >= 0) need[stream_of_[a.step]] = true;
      }
    }
    for (int s = 0; s < stream_count(); ++s) {
      if (!need[s] || s == stream) continue;
      const int e = Record(s, "edge");
      if (stream >= 0) {
        Wait(stream, e, "edge");
      } else {
        HostWait(e, "edge");
      }
    }
    before = Known(stream);
    for (const Access& a : accesses_) {
      for (const Access& b : acc) RC_ASSERT(!(Overlap(a, b) && !before.test(a.step)));
    }
    stream_of_.push_back(stream);
    for (Access a : acc) {
      a.step = me;
      accesses_.push_back(a);
    }
    if (stream >= 0) {
      frontier_[stream] = before;
      frontier_[stream].set(me);
    } else {
      host_.set(me);  // a host step happens before everything issued after it
    }
    return me;
  }

  // H2D, D2H or D2D. Not host to host: the docs call that "fully synchronous with respect to
  // the host" and do not say where it falls in stream order.
  void Copy(int s, int src, size_t so, int dst, size_t d, size_t len) {
    const bool hs = on_host(src), hd = on_host(dst);
    if (hs && hd) return;
    Issue(s, {{0, src, so, len, false}, {0, dst, d, len, true}});
    const cudaMemcpyKind kind = hs ? cudaMemcpyHostToDevice : (hd ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
    Log(s) << "copy b" << src << "[" << so << "] -> b" << dst << "[" << d << "] len " << len;
    // copy-check: the destination is compared with the model at host waits and at the end
    RC_ASSERT(cudaMemcpyAsync(bufs_[dst]->ptr() + d, bufs_[src]->ptr() + so, len, kind, S(s)) == cudaSuccess);
    std::memmove(model_[dst].data() + d, model_[src].data() + so, len);
  }

  void Add(int s, int b, size_t off, size_t len, unsigned char c) {
    Issue(s, {{0, b, off, len, true}});
    Log(s) << "add " << int(c) << " b" << b << "[" << off << "] len " << len;
    RC_ASSERT(LaunchDagAdd(bufs_[b]->dev() + off, len, c, S(s)) == cudaSuccess);
    for (size_t i = 0; i < len; ++i) model_[b][off + i] = static_cast<unsigned char>(model_[b][off + i] + c);
  }

  void Twist(int s, int src, size_t so, int dst, size_t d, size_t len, uint32_t key) {
    Issue(s, {{0, src, so, len, false}, {0, dst, d, len, true}});
    Log(s) << "twist b" << src << "[" << so << "] -> b" << dst << "[" << d << "] len " << len << " key " << key;
    RC_ASSERT(LaunchDagTwistCopy(bufs_[dst]->dev() + d, bufs_[src]->dev() + so, len, key, S(s)) == cudaSuccess);
    std::vector<unsigned char> from(model_[src].begin() + so, model_[src].begin() + so + len);
    for (size_t i = 0; i < len; ++i) model_[dst][d + i] = DagTwist(from[i], i, key);
  }

  void Memset(int s, int b, size_t off, size_t len, unsigned char v) {
    Issue(s, {{0, b, off, len, true}});
    Log(s) << "memset b" << b << "[" << off << "] len " << len << " = " << int(v);
    // copy-check: the buffer is compared with the model at host waits and at the end
    RC_ASSERT(cudaMemsetAsync(bufs_[b]->dev() + off, v, len, S(s)) == cudaSuccess);
    std::memset(model_[b].data() + off, v, len);
  }

  void HostWrite(int b, size_t off, size_t len, uint32_t seed) {
    Issue(-1, {{0, b, off, len, true}});
    Log(-1) << "host write b" << b << "[" << off << "] len " << len;
    for (size_t i = 0; i < len; ++i) {
      model_[b][off + i] = PatternByte(i, seed);
      bufs_[b]->host()[off + i] = model_[b][off + i];
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }

  void Delay(int s) {
    Issue(s, {});
    Log(s) << "delay " << kDelayMs << " ms";
    RC_ASSERT(LaunchDelay(streams::DelayNs(kDelayMs), S(s)) == cudaSuccess);
  }

  // A fresh event recorded on s; returns its index.
  int Record(int s, const char* why) {
    events_.emplace_back(cudaEventDisableTiming);
    RC_ASSERT(events_.back().status() == cudaSuccess);
    const int e = static_cast<int>(events_.size()) - 1;
    event_sets_.push_back(Known(s));
    Log(s) << why << ": record e" << e;
    RC_ASSERT(cudaEventRecord(events_[e].get(), S(s)) == cudaSuccess);
    if (std::string(why) != "edge") recorded_events_.push_back(e);
    return e;
  }

  void Wait(int s, int e, const char* why) {
    Log(s) << why << ": wait e" << e;
    RC_ASSERT(cudaStreamWaitEvent(S(s), events_[e].get(), 0) == cudaSuccess);
    frontier_[s] |= event_sets_[e];
  }

  // The host waits for the event (bounded), then checks every buffer whose writers it now knows
  // complete.
  void HostWait(int e, const char* why) {
    Log(-1) << why << ": host waits for e" << e;
    const cudaError_t r = streams::PollEvent(events_[e].get(), kWaitS);
    if (r != cudaSuccess) RC_FAIL("event e" + std::to_string(e) + ": " + cudaGetErrorName(r) + "\n" + trace());
    host_ |= event_sets_[e];
    CheckQuiescent("after the host waited for e" + std::to_string(e));
  }

  // Every stream drained (bounded), then every buffer compared.
  void Finish() {
    for (int s = 0; s < stream_count(); ++s) {
      const cudaError_t r = streams::PollStream(S(s), kWaitS);
      if (r != cudaSuccess) RC_FAIL("stream s" + std::to_string(s) + ": " + cudaGetErrorName(r) + "\n" + trace());
      host_ |= frontier_[s];
    }
    CheckQuiescent("at the end");
  }

 private:
  cudaStream_t S(int s) const { return streams_[s]->get(); }
  Steps Known(int stream) const { return stream < 0 ? host_ : (frontier_[stream] | host_); }
  std::ostream& Log(int s) {
    trace_ << "\n  " << (s < 0 ? std::string("host") : "s" + std::to_string(s)) << ": ";
    return trace_;
  }

  void CheckQuiescent(const std::string& when) {
    for (int b = 0; b < buffers(); ++b) {
      bool quiet = true;
      for (const Access& a : accesses_) quiet &= !(a.buf == b && a.write && !host_.test(a.step));
      if (!quiet) continue;
      std::vector<unsigned char> got(n_);
      if (on_host(b)) {
        std::memcpy(got.data(), bufs_[b]->host(), n_);
      } else {
        // A non-blocking stream of its own: the read adds no order to the DAG's streams.
        // copy-check: the bytes read back are compared with the model below
        RC_ASSERT(cudaMemcpyAsync(got.data(), bufs_[b]->dev(), n_, cudaMemcpyDeviceToHost, check_) == cudaSuccess);
        RC_ASSERT(streams::PollStream(check_, kWaitS) == cudaSuccess);
      }
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < n_; ++i) {
        if (got[i] != model_[b][i] && !bad++) first = i;
      }
      if (bad) {
        std::ostringstream m;
        m << "buffer b" << b << " (" << streams::MemName(bufs_[b]->kind()) << ") " << when << ": " << bad << " of "
          << n_ << " bytes differ from the model (first at " << first << ": got " << int(got[first]) << ", want "
          << int(model_[b][first]) << "); the DAG:" << trace();
        RC_FAIL(m.str());
      }
    }
  }

  size_t n_;
  std::vector<std::unique_ptr<KindBuffer>> bufs_;
  std::vector<std::unique_ptr<KindStream>> streams_;
  cudaStream_t check_;
  std::vector<Steps> frontier_;  // per stream: the steps that happen before its next step
  Steps host_;                   // the steps the host knows complete (and its own writes)
  std::vector<int> stream_of_;  // per step: its stream, -1 for the host
  std::vector<Access> accesses_;
  std::vector<OwnedEvent> events_;
  std::vector<Steps> event_sets_;
  std::vector<int> recorded_events_;  // the random ones (edges are not reused)
  std::vector<std::vector<unsigned char>> model_;
  std::ostringstream trace_;
};

// A window [off, off + len) of an n-byte buffer: the whole buffer a third of the time (so steps
// conflict often), else random.
std::pair<size_t, size_t> PickWindow(size_t n) {
  if (*rc::gen::inRange(0, 3) == 0) return {0, n};
  const size_t len = *rc::gen::inRange<size_t>(1, n + 1);
  return {*rc::gen::inRange<size_t>(0, n - len + 1), len};
}

// Source and destination windows of one length; in one buffer they must not overlap.
bool PickPair(size_t n, bool same, size_t* so, size_t* d, size_t* len) {
  const auto w = PickWindow(n);
  *len = w.second;
  *so = w.first;
  *d = *rc::gen::inRange<size_t>(0, n - *len + 1);
  return !same || *so + *len <= *d || *d + *len <= *so;
}

RC_GTEST_FIXTURE_PROP(StreamDagProperty, RandomEventDagsDeliverTheModelsBytes, ()) {
  if (!ready() || !Require(RequireAttr(cudaDevAttrCanMapHostMemory, 1))) return;
  PAGELOCK_RULE("S21,S22");
  const bool can_register = RequireAttr(cudaDevAttrHostRegisterSupported, 1).met;
  const size_t n = *gen::BoundarySize(kMaxBytes);

  std::vector<std::unique_ptr<KindBuffer>> bufs;
  const int nbuf = *rc::gen::inRange(2, 5);
  for (int b = 0; b < nbuf; ++b) {
    HostKind m = *rc::gen::element(HostKind::kHostAllocMapped, HostKind::kRegisteredMalloc, HostKind::kDevice);
    if (m == HostKind::kRegisteredMalloc && !can_register) m = HostKind::kHostAllocMapped;
    RC_CLASSIFY(m == HostKind::kRegisteredMalloc, "registered");
    std::string why;
    bufs.push_back(KindBuffer::Make(m, n, &why));
    if (!bufs.back()) RC_FAIL(streams::MemName(m) + " of " + std::to_string(n) + " bytes: " + why);
  }
  std::vector<std::unique_ptr<KindStream>> ss;
  const int nstreams = *rc::gen::inRange(2, 5);
  bool per_thread = false;
  std::ostringstream kinds;
  for (int s = 0; s < nstreams; ++s) {
    StreamKind k = *rc::gen::element(StreamKind::kBlocking, StreamKind::kNonBlocking, StreamKind::kPerThreadDefault);
    if (k == StreamKind::kPerThreadDefault && per_thread) k = StreamKind::kNonBlocking;  // there is one
    per_thread |= k == StreamKind::kPerThreadDefault;
    ss.push_back(std::make_unique<KindStream>(k));
    RC_ASSERT(ss.back()->status() == cudaSuccess);
    kinds << " s" << s << "=" << StreamKindName(k);
  }
  KindStream check(StreamKind::kNonBlocking);
  RC_ASSERT(check.status() == cudaSuccess);
  RC_CLASSIFY(per_thread, "per-thread stream");

  Dag dag(n, std::move(bufs), std::move(ss), check.get());
  RC_LOG() << n << " bytes," << kinds.str() << std::endl;
  dag.Fill(*rc::gen::arbitrary<uint32_t>());
  const int nsteps = *rc::gen::inRange(1, kMaxSteps + 1);
  for (int i = 0; i < nsteps; ++i) {
    const Op op = *rc::gen::weightedElement<Op>({{4, Op::kCopy}, {3, Op::kAdd}, {3, Op::kTwist}, {2, Op::kMemset},
                                                 {2, Op::kHostWrite}, {2, Op::kDelay}, {4, Op::kRecord},
                                                 {4, Op::kWait}, {2, Op::kHostWait}});
    const int s = *rc::gen::inRange(0, dag.stream_count());
    const int a = *rc::gen::inRange(0, dag.buffers()), b = *rc::gen::inRange(0, dag.buffers());
    size_t so = 0, d = 0, len = 0;
    switch (op) {
      case Op::kCopy:
        if (PickPair(n, a == b, &so, &d, &len)) dag.Copy(s, a, so, b, d, len);
        break;
      case Op::kTwist:
        if (PickPair(n, a == b, &so, &d, &len)) dag.Twist(s, a, so, b, d, len, *rc::gen::arbitrary<uint32_t>());
        break;
      case Op::kAdd: {
        const auto w = PickWindow(n);
        dag.Add(s, a, w.first, w.second, *rc::gen::inRange<unsigned char>(1, 255));
        break;
      }
      case Op::kMemset: {
        const auto w = PickWindow(n);
        dag.Memset(s, a, w.first, w.second, *rc::gen::arbitrary<unsigned char>());
        break;
      }
      case Op::kHostWrite: {
        if (!dag.on_host(a)) break;
        const auto w = PickWindow(n);
        dag.HostWrite(a, w.first, w.second, *rc::gen::arbitrary<uint32_t>());
        break;
      }
      case Op::kDelay: dag.Delay(s); break;
      case Op::kRecord: dag.Record(s, "random"); break;
      case Op::kWait:
      case Op::kHostWait: {
        if (dag.recorded().empty()) break;
        const int e = dag.recorded()[*rc::gen::inRange<size_t>(0, dag.recorded().size())];
        if (op == Op::kWait) {
          dag.Wait(s, e, "random");
        } else {
          dag.HostWait(e, "random");
        }
        break;
      }
    }
  }
  RC_LOG() << "the DAG:" << dag.trace() << std::endl;
  dag.Finish();
}

}  // namespace
}  // namespace pagelock
