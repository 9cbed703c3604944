"""xrt2pjrt.shim.cpu.replica, end to end: how a replica runs its function and when it may leave."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from replica_programs import ROOT, by_ordinal, run_program


SIGNAL_IN_REPLICA = textwrap.dedent("""
    import signal
    import torch_xla.distributed.xla_multiprocessing as xmp

    def _mp_fn(index):
        signal.signal(signal.SIGTERM, lambda *a: None)

    if __name__ == '__main__':
        xmp.spawn(_mp_fn)
""")


@pytest.mark.slow
@pytest.mark.xla
def test_the_spawned_function_runs_in_a_thread_as_torch_xla_runs_it_on_a_tpu(tmp_path):
    """signal.signal in _mp_fn raises on a TPU (torch_xla runs fn in a thread per device;
    checked with torch_xla's own spawn on CPU): it passed in the CPU replicas, which ran fn in
    the main thread, hiding the crash."""
    script = tmp_path / "train.py"
    script.write_text(SIGNAL_IN_REPLICA)
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "2", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert ran.returncode != 0
    assert "ValueError: signal only works in main thread" in ran.stdout + ran.stderr


WORK_ALONE_AFTER_THE_LAST_COLLECTIVE = """
def _mp_fn(index):
    xm.rendezvous("trained")
    if xm.is_master_ordinal():
        time.sleep(6)  # a final evaluation, an upload: longer than the rendezvous timeout below
    dump(str(index), {"ended": time.time()})
"""


@pytest.mark.slow
@pytest.mark.xla
def test_a_replica_may_work_alone_after_the_others_returned_for_longer_than_the_rendezvous_timeout(tmp_path):
    """On a pod a replica whose function returned waits for nobody: the master's work after
    the last collective may take longer than any rendezvous timeout (the CPU mode's own exit
    barrier timed out after it, killed the master mid-work and failed the run)."""
    code, results, output = run_program(
        tmp_path, WORK_ALONE_AFTER_THE_LAST_COLLECTIVE, 2, env={"XRT2PJRT_RENDEZVOUS_TIMEOUT": "2"}
    )
    assert code == 0, output[-3000:]
    replicas = by_ordinal(results)
    assert sorted(replicas) == [0, 1] and replicas[0]["ended"] - replicas[1]["ended"] > 4
    assert "error" not in results["parent"]
