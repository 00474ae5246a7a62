"""The few macros BUILD files use. They own the tag vocabulary, size and timeout, so every test
of a kind is scheduled the same way:

  gpu_test         conformance test on a GPU           tags: gpu, tier_bat|tier_full, external
  gpu_prop_test    RapidCheck property on a GPU        + prop
  gpu_stress_test  bounded stress test                 + stress, exclusive (skipped unless
                                                         --config=stress)
  host_test        harness self-test, no GPU needed    tags: host

Every GPU test also runs on a machine without a GPU, where its cases report NotSupported with the
reason (for example cudaGetDeviceCount=cudaErrorInsufficientDriver).
`gpus = N` (N > 1) adds multi_gpu, requires-gpu:N and exclusive. `exclusive = True` adds exclusive
(the test runs alone: timings or host-wide counters that another test would disturb).
"""

load("//tools/bazel:copts.bzl", "HOST_COPTS")

_FIXTURES = ["//fixtures", "//fixtures:main"]

def _family():
    return native.package_name().split("/")[-1]

def _exec_properties(tags):
    # Remote execution: platform properties a Remote Execution API service can route on
    # (docs/fleet.md). GPU count from the tags; the SKU from a `sku_<name>` tag if a test has one,
    # else from --remote_default_exec_properties=gpu_sku=... (.bazelrc, config remote).
    # The keys are scoped to the `test` exec group (Bazel >= 4.1): only the test action asks for a
    # GPU worker; compiling and linking a GPU test route like any other action.
    if "gpu" not in tags:
        return {}
    props = {"test.gpu_count": "1"}
    for t in tags:
        if t.startswith("requires-gpu:"):
            props["test.gpu_count"] = t[len("requires-gpu:"):]
        elif t.startswith("sku_"):
            props["test.gpu_sku"] = t[len("sku_"):]
    return props

def _cc_test(name, srcs, deps, tags, size, timeout, **kwargs):
    # The sources, for tools/spec_check.py's test (rules named by each test).
    native.filegroup(name = name + ".srcs", srcs = srcs, visibility = ["//suites:__pkg__"])
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + _FIXTURES,
        copts = HOST_COPTS + kwargs.pop("copts", []),
        # Static linking keeps nvcc objects and the static cudart together (in a shared library the
        # nvcc objects lost their cudart symbols).
        linkstatic = True,
        tags = tags + ["family_" + _family()],
        exec_properties = kwargs.pop("exec_properties", _exec_properties(tags)),
        size = size,
        timeout = timeout,
        **kwargs
    )

def _gpu_tags(tier, gpus, exclusive = False):
    tags = ["gpu", "external", "tier_" + tier]
    if gpus > 1:
        tags += ["multi_gpu", "requires-gpu:%d" % gpus, "exclusive"]
    elif exclusive:
        tags.append("exclusive")
    return tags

def gpu_test(name, srcs, deps = [], tier = "bat", gpus = 1, exclusive = False, size = "medium", timeout = "moderate", **kwargs):
    _cc_test(name, srcs, deps, _gpu_tags(tier, gpus, exclusive), size, timeout, **kwargs)

def gpu_prop_test(name, srcs, deps = [], tier = "full", gpus = 1, **kwargs):
    _cc_test(name, srcs, deps + ["@rapidcheck"], _gpu_tags(tier, gpus) + ["prop"], "medium", "moderate", **kwargs)

def gpu_stress_test(name, srcs, deps = [], gpus = 1, **kwargs):
    _cc_test(name, srcs, deps, _gpu_tags("stress", gpus) + ["stress", "exclusive"], "large", "long", **kwargs)

def host_test(name, srcs, deps = [], **kwargs):
    _cc_test(name, srcs, deps, ["host"], "small", "short", **kwargs)
