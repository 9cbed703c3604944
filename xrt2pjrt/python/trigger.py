"""The Python rewriter's trigger, apart from the rewriter so that the engine can test a file
with it without importing libcst (rewriters.trigger_for): most files of a tree stop here."""

from xrt2pjrt.rewriters import Words
from xrt2pjrt.xrt_variables import UNPREFIXED

# A file that matches none of these cannot hold anything a Python rule acts on.
# (xrt_world_size: a file may call torch_xla by a name borrowed from a module of its own)
TRIGGER = Words("torch_xla", "XRT_", "xenv", "xla_dist", "xrt_world_size", *UNPREFIXED)
