// The registry of the catalogue: the areas (one file each under catalogue/), the shapes and the
// batches, and Catalogue(), Conforming() and FindFault() over the areas' tables (fault.h).
//
// A new area: write catalogue/<area>.cc (its installers, its table and its
// `extern const Area k<Area>Area = FaultArea("<area>", kFaults);`), then add one PL_AREA line
// below. The Bazel target and build_shim.sh compile every file of catalogue/.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "tools/faults/fault.h"

namespace pagelock_faults {

#define PL_AREAS(PL_AREA)          \
  PL_AREA(kCopiesArea)             \
  PL_AREA(kAsyncCopiesArea)        \
  PL_AREA(kCopies2D3DArea)         \
  PL_AREA(kMemsetsArea)            \
  PL_AREA(kStreamsArea)            \
  PL_AREA(kEventsArea)             \
  PL_AREA(kGraphsArea)             \
  PL_AREA(kHostAllocationArea)     \
  PL_AREA(kRegistrationArea)       \
  PL_AREA(kDevicePointersArea)     \
  PL_AREA(kPointerAttributesArea)  \
  PL_AREA(kContextsArea)           \
  PL_AREA(kConformingPlatformsArea) \
  PL_AREA(kCapabilitiesArea)       \
  PL_AREA(kVmmHostArea)            \
  PL_AREA(kBatchCopiesArea)        \
  PL_AREA(kGraphUpdatesArea)       \
  PL_AREA(kConformingArea)

#define PL_DECLARE_AREA(area) extern const Area area;
PL_AREAS(PL_DECLARE_AREA)
#undef PL_DECLARE_AREA

namespace {

const Area* const kAreas[] = {
#define PL_LIST_AREA(area) &area,
    PL_AREAS(PL_LIST_AREA)
#undef PL_LIST_AREA
};

// Where in the input space a fault fires. baseline: on every call of the entries it hooks; the
// others only in part of the input space, as real driver bugs tend to: at some sizes or
// alignments (size), for one entry point, stream kind or memory kind (variant), after a count,
// a reused address or a reset (stateful), later than reported (timing), or where two ways of
// asking one question disagree (crossapi).
const char* const kShapes[] = {"baseline", "size", "variant", "stateful", "timing", "crossapi"};

// The batches the catalogue grew in, oldest first. The blind batches' first scores on the H200
// are in docs/mutation.md.
const Batch kBatches[] = {
    {"catalogue-1", false, "the first 72 faults, one per rule, written with the tests beside them"},
    {"shapes", false,
     "faults of the other shapes; tests were written for its survivors' families after its "
     "first measurement"},
    {"blind-9", false,
     "written from the documented rules, the semantics reference and the shim alone, without "
     "sight of the tests; a test for its survivor's family was written after its first "
     "measurement"},
    {"blind-10", false,
     "written from the documented rules and the shim alone, without sight of the tests; tests "
     "for its survivors' families were written after its first measurement"},
    {"blind-11", false,
     "written from the documented rules and the shim alone, without sight of the tests; tests "
     "for its survivors' families were written after its first measurement"},
    {"blind-12", true,
     "written from rules.tsv R171-R175, S24-S29, P15-P18, C23, the documentation and the shim "
     "alone, without sight of the tests"},
    {"refusals", false,
     "faults in the refusals the tests accept where the documentation allows them (a refused "
     "call must have moved nothing), each written after the case it proves"},
};

// Every row of one catalogue (faults or variations) of every area, by order. Never freed: a
// hook may read the active fault's record while the process exits.
const std::vector<Fault>* Collect(bool variations) {
  auto* rows = new std::vector<Fault>;
  for (const Area* a : kAreas) {
    const Fault* f = variations ? a->variations : a->faults;
    rows->insert(rows->end(), f, f + (variations ? a->variation_count : a->fault_count));
  }
  std::stable_sort(rows->begin(), rows->end(),
                   [](const Fault& x, const Fault& y) { return x.order < y.order; });
  return rows;
}

const std::vector<Fault>& Faults() {
  static const std::vector<Fault>* rows = Collect(false);
  return *rows;
}

const std::vector<Fault>& Variations() {
  static const std::vector<Fault>* rows = Collect(true);
  return *rows;
}

bool Known(const char* value, const char* const* names, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (strcmp(value, names[i]) == 0) return true;
  return false;
}

bool KnownBatch(const char* name) {
  for (const Batch& b : kBatches)
    if (strcmp(b.name, name) == 0) return true;
  return false;
}

}  // namespace

const Fault* Catalogue(size_t* count) {
  *count = Faults().size();
  return Faults().data();
}

const Fault* Conforming(size_t* count) {
  *count = Variations().size();
  return Variations().data();
}

const Fault* FindFault(const char* name) {
  for (const auto* rows : {&Faults(), &Variations()})
    for (const Fault& f : *rows)
      if (strcmp(f.name, name) == 0) return &f;
  return nullptr;
}

const Batch* Batches(size_t* count) {
  *count = sizeof(kBatches) / sizeof(kBatches[0]);
  return kBatches;
}

const char* const* Shapes(size_t* count) {
  *count = sizeof(kShapes) / sizeof(kShapes[0]);
  return kShapes;
}

const char* CatalogueProblem() {
  static char problem[256];
  const size_t shapes = sizeof(kShapes) / sizeof(kShapes[0]);
  for (const auto* rows : {&Faults(), &Variations()}) {
    const bool faults = rows == &Faults();
    for (size_t i = 0; i < rows->size(); ++i) {
      const Fault& f = (*rows)[i];
      if (i > 0 && (*rows)[i - 1].order == f.order) {
        snprintf(problem, sizeof(problem), "order %d is held by %s and %s", f.order,
                 (*rows)[i - 1].name, f.name);
        return problem;
      }
      if (f.order < 1) {
        snprintf(problem, sizeof(problem), "%s: order %d (from 1)", f.name, f.order);
        return problem;
      }
      if (FindFault(f.name) != &f) {
        snprintf(problem, sizeof(problem), "%s is named twice", f.name);
        return problem;
      }
      if (faults && !Known(f.shape, kShapes, shapes)) {
        snprintf(problem, sizeof(problem), "%s: unknown shape '%s'", f.name, f.shape);
        return problem;
      }
      if (faults && !KnownBatch(f.batch)) {
        snprintf(problem, sizeof(problem), "%s: unknown batch '%s'", f.name, f.batch);
        return problem;
      }
      if (!faults && (*f.shape || *f.batch)) {
        snprintf(problem, sizeof(problem), "%s: a variation has no shape or batch", f.name);
        return problem;
      }
      if (faults && (*f.targets || *f.excluded || *f.env)) {
        snprintf(problem, sizeof(problem), "%s: a fault has no targets, exclusions or environment",
                 f.name);
        return problem;
      }
    }
  }
  return nullptr;
}

}  // namespace pagelock_faults
