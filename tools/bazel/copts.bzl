"""Compiler options shared by every pagelock target."""

HOST_COPTS = [
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
]
