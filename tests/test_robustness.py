"""DataLoader workers after OpenCL was used in the parent (PoCL): nothing hangs.

A worker forked after the parent created an OpenCL context inherits the context's
handles but not the driver's threads, so its first OpenCL kernel waited forever. Now a
forked worker that touches OpenCL raises PyTorch's kind of error (as for CUDA), workers
that stay on the CPU run as before, and the 'spawn' start method runs OpenCL datasets.
Each case runs in a subprocess under a timeout: a hang fails the test instead of the suite.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from ember.core import plugins

pytest.importorskip("pyopencl")
_reason = plugins.safe_unavailable_reason(plugins.get_backend("opencl"))
if _reason is not None:  # pragma: no cover - depends on the machine
    pytest.skip(f"no usable OpenCL device: {_reason}", allow_module_level=True)

SCRIPT = textwrap.dedent("""
    import sys
    import ember
    from ember.utils.data import DataLoader, TensorDataset

    def main(where, context):
        x = ember.ones(8, 8, device="opencl")
        assert (x @ x).sum().item() == 512.0  # the parent's OpenCL context exists
        ds = TensorDataset(ember.arange(32.0, device=where).reshape(8, 4))
        loader = DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context=context)
        try:
            batches = [b for (b,) in loader]
        except RuntimeError as err:
            print("ERROR", " ".join(str(err).split()))
            return
        print("OK", batches[1].device.type, batches[1].tolist(), len(batches))

    if __name__ == "__main__":
        main(sys.argv[1], sys.argv[2])
""")


def _run(tmp_path, where, context):
    script = tmp_path / "loader.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, str(script), where, context], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_forked_worker_touching_opencl_raises_instead_of_hanging(tmp_path):
    line = _run(tmp_path, "opencl", "fork")
    assert line.startswith("ERROR Caught RuntimeError in DataLoader worker process")
    assert "Cannot use OpenCL in a forked subprocess" in line
    assert "multiprocessing_context='spawn'" in line


def test_forked_workers_on_cpu_data_still_work_after_opencl_was_used(tmp_path):
    assert _run(tmp_path, "cpu", "fork") == "OK cpu [[8.0, 9.0, 10.0, 11.0], " \
                                            "[12.0, 13.0, 14.0, 15.0]] 4"


def test_spawned_workers_load_an_opencl_dataset(tmp_path):
    assert _run(tmp_path, "opencl", "spawn") == "OK opencl [[8.0, 9.0, 10.0, 11.0], " \
                                                "[12.0, 13.0, 14.0, 15.0]] 4"
