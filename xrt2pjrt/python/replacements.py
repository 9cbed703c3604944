"""Every torch_xla name the migrated file uses, held to the target release's API.

The specific rules rewrite what they know. These two make the rest visible, from the API
surface tables (python/api_surface.py, generated from the released wheels):

- ``import-gone-module``: an import of a module or name the target release lacks fails
  on import; it is removed when nothing uses it once the other rules are done, else
  reported (with its TODO line) with what to use instead;
- ``api-not-in-target``: runs after every other rule, on what they made of each spot: a
  reference the import resolver can resolve (attribute chain, name passed as a value,
  call) that reaches a name the target lacks, or a call passing a keyword or a positional
  argument its signature there does not take, is reported with the release that removed
  it and its replacement where one is known. A spot another rule has reported is left to
  that rule's item."""

from __future__ import annotations

from xrt2pjrt.python.api_surface import Lack
from xrt2pjrt.report import Advice

NO_SCALER = Advice(
    "drop it: bf16 autocast needs no scaler",
    "nothing replaces it (it served XLA:GPU); autocast to bfloat16 on TPU needs no scaler",
)
NO_GPU = Advice("stay on torch_xla 2.8 for CUDA", "torch_xla 2.9 has no GPU device")
NO_SERVER = Advice("drop it: PJRT runs no XRT server")

# What to use instead of a name (or a call's keyword, as ``name(keyword=)``) a release
# lacks; read from pytorch/xla v1.13 … v2.9. tests/python/test_replacements.py holds every entry to
# the table: the name is lacking in 2.9, and what the advice names exists there.
REPLACEMENTS = {
    "torch_xla.experimental.pjrt": Advice("use torch_xla.runtime", "the pjrt-* rules rewrite the calls they know"),
    "torch_xla.experimental.xla_sharding": Advice(
        "use torch_xla.distributed.spmd", "import torch_xla.distributed.spmd as xs"
    ),
    "torch_xla.experimental.xla_sharded_tensor": Advice(
        "use the one in torch_xla.distributed.spmd", "torch_xla.distributed.spmd.xla_sharded_tensor"
    ),
    "torch_xla.experimental.tpu": Advice(
        "use torch_xla.runtime's counts",
        "nothing public replaces it; torch_xla.runtime has the device and process counts",
    ),
    "torch_xla.experimental.gpu": Advice("drop it: torch_xla 2.9 has no GPU device"),
    "torch_xla.amp.GradScaler": NO_SCALER,
    # up to 2.0 it was torch.cuda.amp.autocast, which took no device
    "torch_xla.amp.autocast(device)": Advice(
        "pass the XLA device first", "torch_xla.amp.autocast(torch_xla.device(), ...)"
    ),
    "torch_xla.amp.grad_scaler": NO_SCALER,
    "torch_xla.utils.gcsfs": Advice("use a GCS client of your own", "google-cloud-storage, gcsfs, fsspec"),
    "torch_xla.utils.cached_dataset": Advice(
        "use a dataset cache of your own", "e.g. torch.save shards, or the datasets library"
    ),
    "torch_xla.utils.tf_record_reader": Advice("use a TFRecord reader of your own", "e.g. tfrecord, tf.data"),
    "torch_xla.distributed.cluster": Advice(
        "drop it: XRT's TPU-node cluster is gone", "nothing replaces it: it resolved XRT's TPU-node cluster"
    ),
    "torch_xla.distributed.worker": Advice(
        "drop it: XRT's TPU-node workers are gone", "nothing replaces it: it described XRT's TPU-node workers"
    ),
    "torch_xla.distributed.xrt_init": Advice("drop it: PJRT needs no runtime set-up"),
    "torch_xla.core.xrt_run_server": NO_SERVER,
    "torch_xla.server_is_alive": NO_SERVER,
    "torch_xla.core.xla_model.CollectiveContext": Advice(
        "drop it, and the collectives' cctx=", "XRT's collective context is gone (the collectives no longer take cctx=)"
    ),
    "torch_xla._XLAC._xla_set_use_full_mat_mul_precision": Advice(
        "use set_mat_mul_precision('highest')",
        "torch_xla.backends.set_mat_mul_precision('highest') (2.8+; 'default' for the old False), or "
        "torch_xla._XLAC._xla_set_mat_mul_precision('highest') on 2.5-2.7",
    ),
    "torch_xla.runtime.requires_pjrt": Advice("drop the decorator", "from 2.1 PJRT is the only runtime"),
    "torch_xla.core.xla_model.parse_xla_device": Advice(
        "parse the device name yourself",
        "it parsed a runtime device name ('TPU:3') into ('TPU', 3), None for any other: "
        "re.match(r'([A-Z]+):(\\d+)$', name) (torch.device() refuses such names)",
    ),
    "torch_xla.core.xla_env_vars.GPU_NUM_DEVICES": NO_GPU,
    "torch_xla.utils.dlpack.from_xla_cuda_to_cuda": NO_GPU,
}


def advice(name: str) -> Advice | None:
    """The replacement of ``name`` (or of the module or class it is in), if one is known."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        found = REPLACEMENTS.get(".".join(parts[:end]))
        if found:
            return found
    return None


def spelled_release(release: tuple[int, int]) -> str:
    return f"torch_xla {release[0]}.{release[1]}"


def missing(spelled: str, lack: Lack, error: str) -> tuple[str, str]:
    """The item for a use, spelled ``spelled`` in the file, of ``lack.name``, which the target
    release lacks: its message (what to use instead, or to replace it) and its long text
    (what, since when, the error it raises there, and the replacement's how)."""
    found = advice(lack.name)
    named = spelled if spelled == lack.name else f"{spelled} ({lack.name})"
    message = found.do if found else f"replace it: not in {spelled_release(lack.release)}"
    return message, f"{named} {why_missing(lack, error)}"


def why_missing(lack: Lack, error: str, replacement: bool = True) -> str:
    """``is not in torch_xla 2.9 (removed in 2.5): an ImportError there; use ...``"""
    text = f"is not in {spelled_release(lack.release)} ({lack.history}): {error} there"
    found = advice(lack.name) if replacement else None
    return f"{text}; {found}" if found else text
