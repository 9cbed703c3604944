"""install lines that bring back an XRT-era torch_xla."""
