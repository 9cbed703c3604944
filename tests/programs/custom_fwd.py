# expect: marked
"""torch_xla.amp's custom_fwd/custom_bwd (gone in 2.x)."""
import torch
from torch_xla.amp import autocast, custom_fwd


class Double(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(ctx, x):
        return x * 2


print(Double.apply(torch.ones(2)), autocast)
