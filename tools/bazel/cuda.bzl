"""nvcc compilation for kernels/: `cuda_library` compiles .cu files into objects and hands them
to a cc_library, so the rest of the build is plain C++.

Target architectures come from the build setting //tools:cuda_archs, a comma-separated list of
`sm_XY` (machine code) and `compute_XY` (PTX) entries, e.g.
    bazel build --//tools:cuda_archs=sm_90 //...
"""

load("@cuda//:defs.bzl", "NVCC")

ArchsInfo = provider(fields = ["archs"])

def _archs_setting_impl(ctx):
    archs = [a.strip() for a in ctx.build_setting_value.split(",") if a.strip()]
    for a in archs:
        if not (a.startswith("sm_") or a.startswith("compute_")) or not a.split("_", 1)[1].rstrip("af").isdigit():
            fail("--//tools:cuda_archs: '{}' is not of the form sm_XY or compute_XY".format(a))
    if not archs:
        fail("--//tools:cuda_archs is empty")
    return ArchsInfo(archs = archs)

cuda_archs_setting = rule(
    implementation = _archs_setting_impl,
    build_setting = config.string(flag = True),
)

def _gencode_flags(archs):
    flags = []
    for a in archs:
        kind, num = a.split("_", 1)
        if kind == "sm":
            flags.append("-gencode=arch=compute_{n},code=sm_{n}".format(n = num))
        else:
            flags.append("-gencode=arch=compute_{n},code=compute_{n}".format(n = num))
    return flags

def _cuda_objects_impl(ctx):
    archs = ctx.attr._archs[ArchsInfo].archs
    opt = ctx.var.get("COMPILATION_MODE", "fastbuild") == "opt"
    headers = depset(ctx.files.hdrs, transitive = [
        d[CcInfo].compilation_context.headers
        for d in ctx.attr.deps
        if CcInfo in d
    ])
    includes = depset(transitive = [
        d[CcInfo].compilation_context.system_includes
        for d in ctx.attr.deps
        if CcInfo in d
    ] + [
        d[CcInfo].compilation_context.includes
        for d in ctx.attr.deps
        if CcInfo in d
    ])
    objs = []
    for src in ctx.files.srcs:
        obj = ctx.actions.declare_file("_objs/{}/{}.o".format(ctx.label.name, src.basename[:-len(".cu")]))
        args = ctx.actions.args()
        args.add_all(["-c", "-std=c++17", "-Xcompiler", "-fPIC", "-I", "."])
        args.add_all(["-I" + str(i) for i in includes.to_list()])
        args.add("-O3" if opt else "-O0")
        if not opt:
            args.add("-lineinfo")
        args.add_all(_gencode_flags(archs))
        args.add_all(ctx.attr.copts)
        args.add_all(["-o", obj, src])
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src], transitive = [headers]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc {} ({})".format(src.short_path, ",".join(archs)),
            # nvcc finds its host compiler (g++) and its own tools through PATH.
            use_default_shell_env = True,
        )
        objs.append(obj)
    return [DefaultInfo(files = depset(objs))]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh"]),
        "deps": attr.label_list(),
        "copts": attr.string_list(),
        "_archs": attr.label(default = "//tools:cuda_archs"),
    },
)

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    """A cc_library whose sources are CUDA (.cu) files compiled by nvcc."""
    _cuda_objects(
        name = name + "_objs",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps + ["@cuda//:cuda_headers"],
        copts = copts,
        testonly = kwargs.get("testonly", False),
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_objs"],
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart_static"],
        linkstatic = True,
        alwayslink = True,
        **kwargs
    )
