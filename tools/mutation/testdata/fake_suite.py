#!/usr/bin/env python3
"""A GoogleTest-shaped test binary for the mutation tool's CPU test. It loads libcuda.so.1 (the
fault shim, in front of the fake driver of tools/faults/testdata) through ctypes, like the CUDA
runtime would, and checks three behaviours:
  FakeSuite.CopyDeliversEveryByte   a host-to-device copy delivers every byte (catches data faults)
  FakeSuite.MappingNeedsCanMapHost  NotSupported when CanMapHostMemory=0 (a capability fault)
  FakeSuite.SynchronizeSucceeds     checks only the return code (cannot see an early return)
Supports --gtest_list_tests, --gtest_filter=A:B, --gtest_output=xml:PATH and (for qualify)
--pagelock_fingerprint."""
import ctypes
import sys
import xml.etree.ElementTree as ET

CASES = ["CopyDeliversEveryByte", "MappingNeedsCanMapHost", "SynchronizeSucceeds"]
# The rules each case names (pagelock.rules), as PAGELOCK_RULE records them; a copy of this
# script installed as "fake_norules" names none (a target the rule selection does not pick).
RULES = {"CopyDeliversEveryByte": "R76", "MappingNeedsCanMapHost": "R85",
         "SynchronizeSucceeds": "R77"}
# Installed as "fake_conforming" (the conforming variations' test) it runs other cases:
#   IoMemoryPinsTheR580Code      expects exactly r580's INVALID_VALUE (a false alarm under a
#                                variation that answers another member of R44's set)
#   IoMemoryAcceptsTheDocumentedSet  accepts {INVALID_VALUE, NOT_PERMITTED, NOT_SUPPORTED}
#   ReadOnlyNeedsItsCapability   NotSupported when attribute 113 is 0, else registers read-only
CONFORMING_CASES = ["IoMemoryPinsTheR580Code", "IoMemoryAcceptsTheDocumentedSet",
                    "ReadOnlyNeedsItsCapability"]
RULES.update({"IoMemoryPinsTheR580Code": "R44", "IoMemoryAcceptsTheDocumentedSet": "R44",
              "ReadOnlyNeedsItsCapability": "R42"})


def driver():
    lib = ctypes.CDLL("libcuda.so.1")
    gpa = lib.cuGetProcAddress_v2
    gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                    ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int)]

    def get(name, *argtypes):
        fn = ctypes.c_void_p()
        st = ctypes.c_int()
        if gpa(name.encode(), ctypes.byref(fn), 13000, 0, ctypes.byref(st)) != 0:
            raise RuntimeError(f"no {name}")
        return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(fn.value)
    return get


def register(get, flags):
    """cuMemHostRegister of a fresh 8 KiB buffer with flags; unregisters it again."""
    reg = get("cuMemHostRegister", ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint)
    unreg = get("cuMemHostUnregister", ctypes.c_void_p)
    buf = ctypes.create_string_buffer(8192)
    rc = reg(ctypes.addressof(buf), 8192, flags)
    if rc == 0:
        unreg(ctypes.addressof(buf))
    return rc


def run_conforming_case(name, get):
    if name == "IoMemoryPinsTheR580Code":
        rc = register(get, 0x4)
        return ("PASS", "") if rc == 1 else ("FAIL", f"IoMemory on RAM returned {rc}, expected 1")
    if name == "IoMemoryAcceptsTheDocumentedSet":
        rc = register(get, 0x4)
        return ("PASS", "") if rc in (1, 800, 801) else ("FAIL", f"IoMemory on RAM returned {rc}")
    attr = get("cuDeviceGetAttribute", ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int)
    v = ctypes.c_int()
    attr(ctypes.byref(v), 113, 0)
    if v.value == 0:
        return "SKIP", "NotSupported: HostRegisterReadOnlySupported=0 (need 1) on device 0"
    rc = register(get, 0x8)
    return ("PASS", "") if rc == 0 else ("FAIL", f"read-only registration returned {rc}")


def run_case(name, get):
    """Returns (status, message): PASS, FAIL or SKIP with a NotSupported message."""
    if name in CONFORMING_CASES:
        return run_conforming_case(name, get)
    if name == "CopyDeliversEveryByte":
        alloc = get("cuMemHostAlloc", ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint)
        htod = get("cuMemcpyHtoD", ctypes.c_ulonglong, ctypes.c_void_p, ctypes.c_size_t)
        src, dst = ctypes.c_void_p(), ctypes.c_void_p()
        rc = alloc(ctypes.byref(src), 64, 0) or alloc(ctypes.byref(dst), 64, 0)
        if rc:
            return "FAIL", f"cuMemHostAlloc returned {rc}"
        ctypes.memmove(src, bytes(range(1, 65)), 64)
        ctypes.memset(dst, 0, 64)
        rc = htod(dst.value, src, 64)
        got = ctypes.string_at(dst, 64)
        if rc or got != bytes(range(1, 65)):
            return "FAIL", f"copy rc {rc}, bytes differ"
        return "PASS", ""
    if name == "MappingNeedsCanMapHost":
        attr = get("cuDeviceGetAttribute", ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int)
        v = ctypes.c_int()
        attr(ctypes.byref(v), 19, 0)
        if v.value == 0:
            return "SKIP", "NotSupported: CanMapHostMemory=0 (need 1) on device 0"
        return "PASS", ""
    sync = get("cuCtxSynchronize")
    rc = sync()
    return ("PASS", "") if rc == 0 else ("FAIL", f"cuCtxSynchronize returned {rc}")


def main(argv):
    if "--pagelock_fingerprint" in argv:
        # What qualify's preflight reads: a usable fake GPU.
        print('{"device_status": "usable", "gpu0_name": "Fake GPU", "nvidia_driver": "1.0", '
              '"host": "fakehost"}')
        return 0
    all_cases = CONFORMING_CASES if sys.argv[0].endswith("fake_conforming") else CASES
    if "--gtest_list_tests" in argv:
        print("FakeSuite.")
        for c in all_cases:
            print("  " + c)
        return 0
    cases = all_cases
    xml_path = None
    for a in argv:
        if a.startswith("--gtest_filter=") and a.split("=", 1)[1] not in ("", "*"):
            cases = [c.split(".", 1)[1] for c in a.split("=", 1)[1].split("-")[0].split(":")
                     if "." in c]
        if a.startswith("--gtest_output=xml:"):
            xml_path = a.split(":", 1)[1]
    get = driver()
    root = ET.Element("testsuites", {"name": "AllTests", "tests": str(len(cases))})
    suite = ET.SubElement(root, "testsuite", {"name": "FakeSuite", "tests": str(len(cases))})
    failed = False
    for c in cases:
        status, message = run_case(c, get)
        el = ET.SubElement(suite, "testcase", {"name": c, "classname": "FakeSuite", "status": "run",
                                               "result": "completed", "time": "0.001"})
        if not sys.argv[0].endswith("fake_norules"):
            props = ET.SubElement(el, "properties")
            ET.SubElement(props, "property", {"name": "pagelock.rules", "value": RULES[c]})
        if status == "FAIL":
            failed = True
            ET.SubElement(el, "failure", {"message": message}).text = message
        elif status == "SKIP":
            el.set("result", "skipped")
            ET.SubElement(el, "skipped", {"message": message}).text = message
        print(f"[ {status} ] FakeSuite.{c} {message}")
    if xml_path:
        ET.ElementTree(root).write(xml_path, encoding="UTF-8", xml_declaration=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
