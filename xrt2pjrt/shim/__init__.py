"""The XRT-era ``xm`` and ``xmp`` APIs, with correct semantics on torch_xla's PJRT runtime.

Change two imports and nothing else::

    import xrt2pjrt.shim.xla_model as xm
    import xrt2pjrt.shim.xla_multiprocessing as xmp

Importing this package imports nothing heavy; ``xla_model`` and ``xla_multiprocessing``
import torch_xla, ``topology`` does not.
"""
