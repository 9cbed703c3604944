"""Check that pytorch/xla v1.13's test/test_mp_distributed_mm.py passes once migrated, with no
hand edits: natively and on the shim, each on 4 CPU replicas, with its body made to run.

    python tools/check_mp_distributed_mm.py PATH [--nprocs 4]

PATH is the test file as pytorch/xla v1.13.0 has it (``git show v1.13.0:test/test_mp_distributed_mm.py``
in a clone: upstream code is not committed here, and CI has no network). This copies it twice
into a temporary folder, runs ``xrt2pjrt migrate --write`` on one copy and ``xrt2pjrt migrate
--write --target shim`` on the other, and runs each with ``xrt2pjrt run --nprocs N``: the
xrt2pjrt of the checkout this file is in, wherever it is run from.

The test's body sits behind ``if xm.xla_device_hw(device) in ('TPU', 'GPU')``: on CPU it would
print "is not a TPU or GPU device" and pass without testing anything. So every replica gets a
``sitecustomize`` that answers 'TPU' to that one call, the call the test file itself makes (torch_xla's
own calls of ``xla_device_hw`` still get 'CPU'), and notes that it did; a run passes only when
it exits 0, every replica took the body (N notes from N processes) and none printed that the
device was not a TPU. Prints one line per target and ``pass`` or ``fail``; exit code 0 when
both pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

NAME = "test_mp_distributed_mm.py"
SKIPPED = "is not a TPU or GPU device"

# Imported by every Python process of a run (PYTHONPATH): once torch_xla.core.xla_model is
# loaded, its xla_device_hw answers 'TPU' for a CPU device when the checked file asks.
SITECUSTOMIZE = textwrap.dedent('''\
    import importlib.abc
    import importlib.util
    import os
    import sys

    _CHECKED = os.path.realpath(os.environ["CHECK_MP_MM_FILE"])
    _NOTES = os.environ["CHECK_MP_MM_NOTES"]


    def _forced(original):
        def xla_device_hw(device):
            found = original(device)
            if found == "CPU" and os.path.realpath(sys._getframe(1).f_code.co_filename) == _CHECKED:
                with open(os.path.join(_NOTES, str(os.getpid())), "a") as note:
                    note.write(f"{device}\\n")
                return "TPU"
            return found
        return xla_device_hw


    class _Patch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "torch_xla.core.xla_model":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                module.xla_device_hw = _forced(module.xla_device_hw)

            spec.loader.exec_module = exec_module
            return spec


    sys.meta_path.insert(0, _Patch())
    ''')


# The xrt2pjrt this tool checks: the checkout it is in, whatever the folder it is run from
# (``python -m`` would take the current folder's first) and whatever the install points at.
CHECKOUT = Path(__file__).resolve().parent.parent


def _xrt2pjrt(*args: str, cwd: Path, path: tuple[str, ...] = (), **env: str) -> subprocess.CompletedProcess:
    pythonpath = [*path, str(CHECKOUT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(pythonpath)}
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=900
    )


def check(source: Path, target: str, nprocs: int, work: Path) -> tuple[bool, str]:
    """Migrate a copy of ``source`` for ``target`` and run it; (passed, why)."""
    folder, notes, site = work / target, work / f"{target}-notes", work / f"{target}-site"
    for made in (folder, notes, site):
        made.mkdir()
    copy = folder / NAME
    shutil.copyfile(source, copy)
    migrated = _xrt2pjrt(
        "migrate", "--write", *(["--target", "shim"] if target == "shim" else []), str(folder), cwd=work
    )
    if migrated.returncode != 0:
        return False, f"migrate exited {migrated.returncode}: {migrated.stderr.strip()[-500:]}"
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    ran = _xrt2pjrt(
        "run",
        "--nprocs",
        str(nprocs),
        NAME,
        cwd=folder,
        path=(str(site),),
        CHECK_MP_MM_FILE=str(copy),
        CHECK_MP_MM_NOTES=str(notes),
    )
    took_body = len(list(notes.iterdir()))
    if ran.returncode != 0:
        return False, f"exited {ran.returncode}:\n" + "\n".join(ran.stderr.strip().splitlines()[-12:])
    if SKIPPED in ran.stderr:
        return False, "a replica skipped the body: " + SKIPPED
    if took_body != nprocs:
        return False, f"{took_body} of {nprocs} replicas ran the body"
    return True, f"{nprocs} replicas ran the body, and the run exited 0"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help=f"pytorch/xla v1.13.0's test/{NAME}")
    parser.add_argument("--nprocs", type=int, default=4, help="CPU replicas (default 4)")
    options = parser.parse_args(argv)
    passed = True
    with tempfile.TemporaryDirectory(prefix="xrt2pjrt-mpmm-") as work:
        for target in ("native", "shim"):
            ok, why = check(options.path, target, options.nprocs, Path(work))
            print(f"{target}: {'pass' if ok else 'fail'}: {why}")
            passed &= ok
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
