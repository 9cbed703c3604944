# expect: ran
"""all_reduce with the collective context passed by position, pin_layout after it."""
import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
grads = [torch.ones(3, device=device)]
context = None
xm.all_reduce(xm.REDUCE_SUM, grads, 1.0 / xm.xrt_world_size(), None, context, True)
xm.mark_step()
print(grads[0].cpu())
