"""torch.distributed on XLA."""
