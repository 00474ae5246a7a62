"""Moved to //tools/bazel:cuda.bzl; this forwards until no BUILD file loads it from here."""

load("//tools/bazel:cuda.bzl", _cuda_archs_setting = "cuda_archs_setting", _cuda_library = "cuda_library")

cuda_archs_setting = _cuda_archs_setting
cuda_library = _cuda_library
