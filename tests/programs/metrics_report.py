# expect: marked
"""Metrics and a private binding that is still there, beside one that is not."""
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

t = torch.ones(3, device=xm.xla_device()) * 2
xm.mark_step()
print(met.metric_names()[:3], len(met.metrics_report()) > 0)
print(torch_xla._XLAC._xla_get_default_device())
token = torch_xla._XLAC._xla_create_token(str(xm.xla_device()))
print(token)
