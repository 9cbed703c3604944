"""xm / xr calls renamed or removed in torch_xla 2.x."""
