# expect: marked
"""Removed names reached by string: hasattr probes (fine) and getattr calls."""
import torch_xla.core.xla_model as xm

if hasattr(xm, 'xrt_world_size'):
    world = xm.xrt_world_size()
else:
    world = 1
size = getattr(xm, 'xrt_world_size')()
print(world, size)
