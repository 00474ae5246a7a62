"""Moved to //tools/bazel:copts.bzl; this forwards until no BUILD file loads it from here."""

load("//tools/bazel:copts.bzl", _HOST_COPTS = "HOST_COPTS")

HOST_COPTS = _HOST_COPTS
