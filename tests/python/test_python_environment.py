"""The environment a Python file builds (python/environment.py): every place a variable is
set, in os.environ or in a copy of it handed to a child process, is migrated alike."""

import textwrap

from python_migrate import text


def test_the_environment_a_launcher_builds_for_a_child_process_is_migrated_too():
    # XRT-era launchers copied os.environ, set XRT_* in the copy and passed it to subprocess.
    out = text("""\
        import os
        import subprocess
        import torch_xla

        env = os.environ.copy()
        env['XRT_TPU_CONFIG'] = 'localservice;0;localhost:51011'
        env.update(XRT_MESH_SERVICE_ADDRESS='localhost:53627')
        subprocess.run(['python', 't.py'], env=dict(os.environ, XRT_TPU_CONFIG='localservice;0;localhost:51011'))
        config.update(lr=0.1)
        """)
    assert out.endswith(
        textwrap.dedent("""\
        env = os.environ.copy()
        env['PJRT_DEVICE'] = 'TPU'
        subprocess.run(['python', 't.py'], env=dict(os.environ, PJRT_DEVICE='TPU'))
        config.update(lr=0.1)
        """)
    )
