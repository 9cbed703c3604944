import os
import sys

# `python -m xrt2pjrt` puts the current folder first on sys.path, and users run it at the
# top of their own project, whose folders (fairseq has logging/) would then shadow the
# standard library's modules inside the tool. The console script has no such entry; give
# `-m` the same view: the folder this package lies in, not the current one.
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from xrt2pjrt.cli import main  # noqa: E402

sys.exit(main())
