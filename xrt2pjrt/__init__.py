"""xrt2pjrt: move PyTorch/XLA programs off XRT and onto PJRT, and make them correct there.

Importing this package imports neither torch nor torch_xla.
"""

__version__ = "0.1.0"
