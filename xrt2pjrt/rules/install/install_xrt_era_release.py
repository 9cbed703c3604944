"""Install lines that bring back an XRT-era torch_xla: reported with what to install instead.

Code migrated for ``--target-version`` runs only on that torch_xla, but a repository's
install lines often still fetch the old one: pip and conda installs, wheel URLs, Docker
images, TPU VM runtime versions (tpu-vm-pt-1.13; v2-alpha and tpu-vm-base, Ubuntu 20.04
images whose Python 3.8 torch_xla 2.9 does not install on), a TPU node's client VM image
(``--image-family=torch-xla``), requirements and jsonnet configs
(text/installs.py tells which words do), and in a project that uses torch_xla, a torch==1.x
pin on its own (in a file that installs no torch_xla). Choosing the new versions is a person's decision (torch, torchvision and torch_xla move together), so
each is reported, never rewritten.

A lone torch pin is reported on evidence that it is the TPU environment's: it is in the project's
requirements, or its file names the TPU (or XLA, XRT) and no other device. Lightning 1.7's CPU
code-check job, its script that builds old checkpoints, and DLRM's CUDA image pinned torch 1.x
beside a TPU backend, and none of them runs torch_xla. "The project" is the code the file
serves, the nearest folder above it that holds code (code_trees.py): transformers' research
projects pin torch 1.6 for examples that never import torch_xla.

A release without XRT (2.1 on) older than the target is reported only where it lacks a
spelling the migration writes into that code, from the release each rule says it writes
(``needs``): ``torch_xla.device()`` for ``xm.xla_device()`` from 2.3, ``torch_xla.sync(...)``
for ``xm.mark_step(...)`` from 2.5, FSDP's ``sync_on_finalization=`` from 2.8 (read in
pytorch/xla at v2.2.0-v2.8.0, torch_xla/torch_xla.py and
torch_xla/distributed/fsdp/xla_fully_sharded_data_parallel.py; the tables of python/api_surface.txt).
A torch_xla 2.7 pin runs code migrated for 2.9 that calls neither FSDP's old keyword nor the
full-precision matmul setter, and a person who chose 2.7 has no reason to move.

Colab's two steps, ``curl ... env-setup.py -o pytorch-xla-env-setup.py`` then ``python
pytorch-xla-env-setup.py --version 1.7``, are one item, at the run (in a notebook, in whichever
cell it is): the download installs nothing, and replacing the run replaces both.
"""

from __future__ import annotations

import re

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.installs import INSTALLS_TORCH_XLA, WORDS, finding, torch_pin_finding
from xrt2pjrt.text.rule import TextRule

# An install of an XRT-era torch_xla, whose item says the torch pin beside it too.
_INSTALLS_XRT_ERA = re.compile(
    r"(?i)torch[_-]xla\S*?\s*(?:===?|~=|<=?)\s*v?1\.|torch_xla-1\.|tpu-pytorch|tpu-vm-(?:v4-)?pt-1\."
)
# What shows that a file's lone torch pin is for the TPU: it names the TPU, XLA or XRT; and
# that it is for another device: a CUDA image or toolkit, PyTorch's CPU or CUDA wheels.
_FOR_THE_TPU = re.compile(r"(?i)tpu|xla|xrt")
_ANOTHER_FRAMEWORK = re.compile(r"(?i)\bjax(?:lib)?\b|\bflax\b|\bt5x\b|tensorflow|\btf-nightly\b")
_FOR_ANOTHER_DEVICE = re.compile(r"(?i)cuda|cudnn|nvidia|rocm|/whl/cpu|/whl/cu\d|\+cpu\b|\+cu\d")
# Packages only a TPU environment installs: a dependency list naming one is that environment's.
_TPU_PACKAGE = re.compile(r"(?i)\bcloud-tpu-client\b|\btorch[_-]xla\b|\blibtpu")
# The seed issue's own install line.
# A TPU VM of the XRT years' image, on which the target's install then fails.
_ON_V2_ALPHA = (
    "gcloud compute tpus tpu-vm create t1 --accelerator-type=v3-8 --version=v2-alpha\n"
    "gcloud compute tpus tpu-vm ssh t1 --command=\"pip install 'torch_xla[tpu]~=2.9.0'\"\n"
)
_SEED_WHEEL = (
    "https://storage.googleapis.com/tpu-pytorch/wheels/tpuvm/torch_xla-nightly+20220802-cp38-cp38-linux_x86_64.whl"
)


class InstallXrtEraRelease(TextRule):
    id = "install-xrt-era-release"
    words = (WORDS,)
    fix = "none"
    summary = "Installs, wheels, images and requirements that fetch an XRT-era torch_xla: reported"
    # (each says what it reports with the message ``finding`` writes, as a TODO line above it)
    examples = (
        Example(
            f"sudo pip3 install {_SEED_WHEEL}\n",
            todo_line(finding(_SEED_WHEEL, (2, 9)).do, "install-xrt-era-release")
            + f"sudo pip3 install {_SEED_WHEEL}\n",
            manual=("XRT-era", "torch_xla[tpu]~=2.9.0"),
        ),
        Example(
            "pip install torch==1.13.0 torch_xla[tpuvm]==1.13\n",
            todo_line(finding("torch_xla[tpuvm]==1.13", (2, 9)).do, "install-xrt-era-release")
            + "pip install torch==1.13.0 torch_xla[tpuvm]==1.13\n",
            manual=("torch_xla 1.13",),
        ),
        Example(
            "pip install 'torch_xla[tpu]==2.1.0' -f https://storage.googleapis.com/libtpu-releases/index.html\n",
            todo_line(finding("torch_xla[tpu]==2.1.0", (2, 9)).do, "install-xrt-era-release")
            + "pip install 'torch_xla[tpu]==2.1.0' -f https://storage.googleapis.com/libtpu-releases/index.html\n",
            manual=("older than the 2.9 the code was migrated for",),
        ),
        Example(
            "gcloud compute tpus tpu-vm create my-tpu --zone=us-central2-b --accelerator-type=v4-8 "
            "--version=tpu-vm-v4-pt-1.13\n",
            todo_line(finding("tpu-vm-v4-pt-1.13", (2, 9)).do, "install-xrt-era-release")
            + "gcloud compute tpus tpu-vm create my-tpu --zone=us-central2-b --accelerator-type=v4-8 "
            "--version=tpu-vm-v4-pt-1.13\n",
            manual=("tpu-ubuntu2204-base",),
        ),
        Example(
            _ON_V2_ALPHA,
            todo_line(finding("--version=v2-alpha", (2, 9)).do, "install-xrt-era-release") + _ON_V2_ALPHA,
            manual=("Python 3.8",),
        ),
        Example(
            "gcloud compute instances create client --image-family=torch-xla --image-project=ml-images\n",
            todo_line(finding("--image-family=torch-xla", (2, 9)).do, "install-xrt-era-release")
            + "gcloud compute instances create client --image-family=torch-xla --image-project=ml-images\n",
            manual=("client VM",),
        ),
        Example(
            "pip install 'torch_xla[tpu]~=2.9.0'\n",
            "pip install 'torch_xla[tpu]~=2.9.0'\n",
        ),
    )

    def word(self, rec, word, offset):
        if _no_install_at(rec.text, offset) or _fetches_what_runs_later(rec, word, offset):
            return
        problem = finding(word, rec.options.target_version, _for_torch(rec), rec.options.code_needs)
        setting = _SETTING.fullmatch(word)
        if problem is None and setting and _RELEASE_NAMED.search(setting.group(1)):
            # a variable a later line installs from (TORCH_XLA_WHEEL="torch_xla-1.9-...whl")
            problem = finding(setting.group(1), rec.options.target_version, _for_torch(rec), rec.options.code_needs)
        if problem is None:  # (the pin first: a word of the text at a time, the text's test once a pin)
            pin = torch_pin_finding(word, rec.options.target_version)
            companion = _TORCH_ITSELF.match(word) is None  # torchvision, torchaudio
            # (torch's pin or the XRT-era install of the file says it: one decision for the family)
            said = companion and (_TORCH_1.search(rec.text) or _INSTALLS_XRT_ERA.search(rec.text))
            problem = pin if pin and not said and _pins_the_tpus_torch(rec, offset) else None
        if problem and not (not problem.use and _installs_a_release_too(rec, offset)):
            rec.decide(self.id, offset, problem.do, problem.more, problem.use)


def _installs_a_release_too(rec, offset: int) -> bool:
    """Whether the line at ``offset`` also installs a release to replace (``pip install
    cloud-tpu-client==0.10 .../torch_xla-1.6-...whl``): its item, with the line to put in, is
    the line's one item, and a companion's "remove it" would ask of the same line again."""
    start = rec.text.rfind("\n", 0, offset) + 1
    end = rec.text.find("\n", offset)
    target, torch = rec.options.target_version, _for_torch(rec)
    return any(
        (found := finding(word.strip("'\""), target, torch, rec.options.code_needs)) is not None and found.use
        for word in rec.text[start : end if end >= 0 else len(rec.text)].split()
    )


def _for_torch(rec) -> bool:
    """Whether the file sets up PyTorch: it names it, or it serves code that uses torch_xla (a
    script that only creates the TPU VMs of a training repository) and names no other
    framework (a JAX benchmark beside the PyTorch ones creates its TPU VMs alike)."""
    return rec.options.uses_torch(rec.text) or (
        rec.options.torch_xla_project and not _ANOTHER_FRAMEWORK.search(rec.text)
    )


# A line that installs nothing: a comment, an uninstall.
_COMMENT = re.compile(r"^\s*(?:#|//)")
_UNINSTALL = re.compile(r"\b(?:uninstall|remove)\b")


# torch's own pin, not torchvision's or torchaudio's; a torch 1.x pin among a text's words.
_TORCH_ITSELF = re.compile(r"(?i)torch\b")
_TORCH_1 = re.compile(
    r"""(?i)(?<![\w.-])torch\s*(?:===?|~=|<=?|=\s*["'][\^~]?)\s*v?1\."""
)  # (Poetry's `torch = "^1.5"`)


def _no_install_at(text: str, offset: int) -> bool:
    """Whether the word at ``offset`` stands in a comment line, after an uninstall on its line,
    or in a line of pip's own output pasted into a document: nothing is installed there (``#
    Install the matching libtpu-nightly``, ``pip uninstall torch_xla libtpu-nightly``,
    ``Collecting torch-xla==1.9``; the command that printed it has its item)."""
    before = text[text.rfind("\n", 0, offset) + 1 : offset]
    return bool(_COMMENT.match(before) or _UNINSTALL.search(before) or _PIP_SAID.match(before))


# The lines pip prints while it installs (a notebook's output, exported under its command),
# after what is left of a progress bar's terminal escapes ([K, [?25h).
_PIP_SAID = re.compile(
    r"\s*(?:\x1b?\[\??[\d;]*[A-Za-z]\s*)*(?:Collecting|Downloading|Processing|Requirement already satisfied:|Installing collected packages:"
    r"|Successfully installed|Found existing installation:|Uninstalling|Attempting uninstall:|Using cached)\s"
)

# A shell variable's setting, and a release named in its value (a version or a nightly).
_SETTING = re.compile(r"[A-Za-z_]\w*=(?!=)(.+)", re.S)
_RELEASE_NAMED = re.compile(r"\d+\.\d+|nightly")
# The download of Colab's set-up script, the step before the run that installs.
_FETCH = re.compile(r"^\W*(?:curl|wget)\b")


def _fetches_what_runs_later(rec, word: str, offset: int) -> bool:
    """Whether ``word`` is pytorch-xla-env-setup.py on a line that only downloads it, in a file
    that runs it too: the run's item is the one to decide, a second on the download repeats it."""
    before = rec.text[rec.text.rfind("\n", 0, offset) + 1 : offset]
    return word.endswith("env-setup.py") and bool(_FETCH.match(before)) and rec.options.runs_setup_script(rec.text)


def _pins_the_tpus_torch(rec, offset: int) -> bool:
    """Whether a torch==1.x pin at ``offset`` is the TPU environment's: beside an install of a 2.x
    torch_xla; in a script that installs an XRT-era one, on a line of its own (one on that install's
    line, or in its requirements, is said by that install's item); or on its own in a project that
    uses torch_xla, in its requirements, in a file that names the TPU and no other device (or, a
    dependency list, a package only TPUs install), or on a notebook's line whose notebook names
    torch_xla. A GPU image, a CPU job of the CI, a script that builds old checkpoints on the CPU pin
    what they like."""
    if INSTALLS_TORCH_XLA.search(rec.text):
        if _INSTALLS_XRT_ERA.search(rec.text) is None:
            return True
        return not rec.lists_dependencies and not _installs_a_release_too(rec, offset)
    return (
        rec.options.torch_xla_project
        and (not _FOR_ANOTHER_DEVICE.search(rec.text) or rec.lists_dependencies and _TPU_PACKAGE.search(rec.text))
        and (rec.lists_dependencies or bool(_FOR_THE_TPU.search(rec.text)) or rec.options.names_torch_xla(rec.text))
    )
