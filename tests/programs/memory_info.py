# expect: marked
"""get_memory_info's XRT-era keys (kb_free, kb_total), as fairseq logged them."""
import torch_xla.core.xla_model as xm

device = xm.xla_device()
info = xm.get_memory_info(device)
print("free MB", info['kb_free'] // 1024, "of", info['kb_total'] // 1024)
