"""Each reproducer of a known deviation builds as its page promises, `nvcc x.cu`, with nothing of
pagelock: no include path, no library but the CUDA toolkit's own. Run here (no GPU) it must say it
could not test (exit 2), never that the platform conforms."""

import glob
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def nvcc():
    for cand in (os.path.join(os.environ.get("CUDA_PATH", "/usr/local/cuda"), "bin", "nvcc"), "/usr/local/cuda/bin/nvcc"):
        if os.path.exists(cand):
            return cand
    raise unittest.SkipTest("no nvcc (CUDA_PATH or /usr/local/cuda)")


class ReproTest(unittest.TestCase):
    def test_every_reproducer_builds_alone_and_never_passes_without_a_gpu(self):
        sources = sorted(glob.glob(os.path.join(HERE, "*.cu")))
        self.assertEqual(len(sources), 6, sources)
        out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        for src in sources:
            exe = os.path.join(out, os.path.basename(src)[:-3])
            # -arch native would need a GPU; the toolkit's default architecture runs anywhere.
            b = subprocess.run([nvcc(), src, "-o", exe], capture_output=True, text=True, timeout=600)
            self.assertEqual(b.returncode, 0, f"{src}: {b.stderr[-2000:]}")
            r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                probe = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True) if \
                    os.path.exists("/usr/bin/nvidia-smi") else None
                if probe is None or probe.returncode != 0:
                    self.fail(f"{src}: said 'as documented' on a machine without a GPU: {r.stdout}")


if __name__ == "__main__":
    unittest.main()
