"""Moved to //tools/bazel:defs.bzl; this forwards until no BUILD file loads it from here."""

load("//tools/bazel:defs.bzl", _gpu_prop_test = "gpu_prop_test", _gpu_stress_test = "gpu_stress_test", _gpu_test = "gpu_test", _host_test = "host_test")

gpu_test = _gpu_test
gpu_prop_test = _gpu_prop_test
gpu_stress_test = _gpu_stress_test
host_test = _host_test
