import sys

from xrt2pjrt.cli import main

sys.exit(main())
