# expect: ran
"""A private binding that moved: _xla_set_use_full_mat_mul_precision (gone in 2.5), set by a literal."""
import torch
import torch_xla
import torch_xla.core.xla_model as xm

torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)
device = xm.xla_device()
a = torch.randn(4, 4, device=device)
print((a @ a).sum().item())
