// What the catalogue holds: one Fault per injected driver bug (catalogue.tsv) and per conforming
// variation (conforming.tsv), each selected by PAGELOCK_FAULT=<name>. The rows live with their
// installers in tools/faults/catalogue/<area>.cc, one file per API subject; catalogue.cc lists
// the areas and serves Catalogue(), Conforming() and FindFault() over their tables.
//
// A row of an area's table:
//
//   PL_FAULT(order, "name", "rule", "family", "kind", "shape", "batch",
//            "What the buggy driver does.", InstallName),
//   PL_VARIATION(order, "name", "rules", "family", "kind",
//                "What the driver does (r580: what it does instead).", InstallName,
//                "The documentation that allows it."),
//   PL_SCOPED_VARIATION(order, "name", "rules", "family", "kind", "What the driver does.",
//                       InstallName, "The documentation that allows it.",
//                       "targets regex", "Suite.Case*: why the shim cannot make it conform",
//                       "NAME=value"),
//
// shim_client catalogue / conforming print the built tables; tables.py writes catalogue.tsv,
// split.tsv and conforming.tsv from that listing and tables_test keeps them honest.
#ifndef PAGELOCK_TOOLS_FAULTS_FAULT_H_
#define PAGELOCK_TOOLS_FAULTS_FAULT_H_

#include <cstddef>

namespace pagelock_faults {

struct Fault {
  int order;                // its row in catalogue.tsv (faults) or conforming.tsv (variations),
                            //   from 1: the order the files, mutation.json and the report list
                            //   them in. A new row takes the next free number of its catalogue.
  const char* name;         // PAGELOCK_FAULT value
  const char* rule;         // the rule(s) of suites/rules.tsv it violates (a variation: it tests;
                            //   comma-separated)
  const char* family;       // API family of the suites
  const char* kind;         // faults: "error" | "data" | "sync" | "flag" | "capability" |
                            //   "resource" | "perf"; variations: "code" | "layout" | "timing" |
                            //   "capability" | "flag" | "overlap" | "resource"
  const char* shape;        // faults: where in the input space it fires, one of kShapes
                            //   (catalogue.cc); variations: ""
  const char* batch;        // faults: the batch it came in, one of kBatches (catalogue.cc);
                            //   variations: ""
  const char* description;  // what the buggy (or differently conforming) driver does
  void (*install)();        // sets the hooks (shim.h: HookX(fn))
  const char* doc;          // variations: the documentation that allows it; faults: ""
  // Variations only, for the mutation tool (conforming.tsv; "" for none and for every fault):
  const char* targets;      // a regex (Python re.search) of the target labels it may run
                            //   against; "" : every target it reaches
  const char* excluded;     // cases its runs do not judge, "Pattern: why; Pattern: why" (a glob
                            //   over "Suite.Case" or the whole case id): what the shim cannot
                            //   make conform (a GPU that cannot do what an attribute now says)
  const char* env;          // the environment of its runs, "NAME=value NAME=value" (e.g. the
                            //   suite's own switches a platform implies)
};

#define PL_FAULT(order, name, rule, family, kind, shape, batch, text, install) \
  { order, name, rule, family, kind, shape, batch, text, install, "", "", "", "" }
#define PL_VARIATION(order, name, rule, family, kind, text, install, doc) \
  { order, name, rule, family, kind, "", "", text, install, doc, "", "", "" }
#define PL_SCOPED_VARIATION(order, name, rule, family, kind, text, install, doc, targets, excluded, \
                            env)                                                                  \
  { order, name, rule, family, kind, "", "", text, install, doc, targets, excluded, env }

// A batch of faults written together. A blind batch was written without sight of the tests, and
// no test has been written looking at its faults since: its first score on a GPU measures how
// far the suite generalises. A test written for one of its survivors ends its blindness (set
// blind to false in the same commit).
struct Batch {
  const char* name;
  bool blind;
  const char* how;  // how its faults were written and measured
};

// One subject's tables: the rows of one catalogue/<area>.cc.
struct Area {
  const char* name;
  const Fault* faults;
  size_t fault_count;
  const Fault* variations;
  size_t variation_count;
};
template <size_t N>
constexpr Area FaultArea(const char* name, const Fault (&faults)[N]) {
  return {name, faults, N, nullptr, 0};
}
template <size_t N>
constexpr Area VariationArea(const char* name, const Fault (&variations)[N]) {
  return {name, nullptr, 0, variations, N};
}

// The catalogues, in order (catalogue.cc). The arrays live as long as the process.
const Fault* Catalogue(size_t* count);
const Fault* Conforming(size_t* count);
const Fault* FindFault(const char* name);  // either catalogue; null for an unknown name
const Batch* Batches(size_t* count);
const char* const* Shapes(size_t* count);
// What is wrong with the tables (a name or order used twice, an unknown shape or batch), or null.
const char* CatalogueProblem();

}  // namespace pagelock_faults

#endif  // PAGELOCK_TOOLS_FAULTS_FAULT_H_
