# expect: marked
"""A gone module still used: torch_xla.utils.gcsfs."""
import torch
import torch_xla.utils.gcsfs as gcs


def load(path):
    if path.startswith('gs://'):
        return torch.load(gcs.open(path))
    return torch.load(path)


print(load.__name__)
