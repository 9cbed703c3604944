"""A pin of a library whose pinned release calls torch_xla APIs the target removed (accelerate
before 1.7, transformers before 4.52, lightning before 2.5.3): reported.

Libraries call torch_xla for a program: accelerate's AcceleratorState, transformers' Trainer
samplers and Lightning's XLA environment asked ``xm.xrt_world_size()`` and ``xm.get_ordinal()``,
which torch_xla 2.7 removed (AttributeError), and Lightning before 2.5 asked
``xr.using_pjrt()``, which 2.5 removed. Code migrated by this tool then fails inside the
library. ``LIBRARIES`` holds, for each, the first release that calls none of them, read from
the library's source at that release and the one before (cited there); a pin that keeps an
older one (``==``, ``~=``, ``<``, ``<=``) on a target that lacks what it calls is reported
with the release to pin instead; a pin of a release from before the library called torch_xla at
all (transformers before 2.9, pytorch-lightning before 0.7: ``CALLS_FROM``) is not. Which release to
move to is a person's choice.

A release checked out of the library's git repository and installed from there (``git checkout
tags/v4.20.1; pip install -e .``) is such a pin too; a clone for its example scripts is not. A
pin is reported where the code it serves uses torch_xla (the nearest folder above it that holds
code, code_trees.py) or its file installs torch_xla too: a sub-project of a monorepo pinning
transformers 3.5 for code that never reaches torch_xla calls none of it. transformers calls
torch_xla only from its Trainer and TrainingArguments: a pin for code that uses neither, and runs
none of its example scripts, is left alone. Code that uses what the release asked for lacks
(``is_torch_tpu_available``, TrainingArguments' ``evaluation_strategy``:
registry.TRANSFORMERS_GONE) is told their replacements with the pin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xrt2pjrt.registry import TRANSFORMERS_GONE, Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.installs import INSTALLS_TORCH_XLA
from xrt2pjrt.text.rule import TextRule


@dataclass(frozen=True)
class Fixed:
    """Releases of a library before ``release`` call ``calls``, which torch_xla ``gone_in`` removed."""

    release: tuple[int, ...]
    gone_in: tuple[int, int]
    calls: str
    read: str  # where: the library's source at the release before, and at ``release``


LIBRARIES: dict[str, tuple[Fixed, ...]] = {
    "accelerate": (
        Fixed(
            (1, 7, 0),
            (2, 7),
            "xm.xrt_world_size() and xm.get_ordinal()",
            "accelerate@v1.6.0 src/accelerate/state.py:280; accelerate@v1.7.0 src/accelerate/state.py:284",
        ),
    ),
    "transformers": (
        Fixed(
            (4, 52, 0),
            (2, 7),
            "xm.xrt_world_size() and xm.get_ordinal()",
            "transformers 4.51.3 transformers/trainer_pt_utils.py:401; transformers 4.52.0 "
            "transformers/trainer_pt_utils.py:401",
        ),
    ),
    **dict.fromkeys(
        ("lightning", "pytorch-lightning"),
        (
            Fixed(
                (2, 5, 0),
                (2, 5),
                "xr.using_pjrt()",
                "lightning@2.4.0 src/lightning/fabric/accelerators/xla.py:112; lightning@2.5.0 "
                "src/lightning/fabric/accelerators/xla.py:110",
            ),
            Fixed(
                (2, 5, 3),
                (2, 7),
                "xm.xrt_world_size() and xm.get_ordinal()",
                "lightning@2.5.2 src/lightning/fabric/plugins/environments/xla.py:71; lightning@2.5.3 "
                "src/lightning/fabric/plugins/environments/xla.py:72",
            ),
        ),
    ),
}
# The first release of each that calls torch_xla at all: a pin of an older one runs no torch_xla
# (read in the releases on PyPI: transformers 2.8.0 has no torch_xla call, 2.9.0's Trainer asks
# xm.xrt_world_size(); pytorch-lightning 0.6.0 none, 0.7.1 (0.7.0 is not on PyPI) its TPU
# support; accelerate and lightning called it from their first release).
CALLS_FROM: dict[str, tuple[int, ...]] = {"transformers": (2, 9, 0), "pytorch-lightning": (0, 7, 0)}
# A pin that keeps a release: LIB==1.2.3, LIB~=1.2, LIB<1.3, LIB<=1.2.9 (extras and spaces allowed)
_PIN = re.compile(r"(?i)^([a-z][\w.-]*)(?:\[[^\]]*\])?\s*(===?|~=|<=?)\s*v?(\d+(?:\.\d+)*)")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _below(operator: str, version: tuple[int, ...], release: tuple[int, ...]) -> bool:
    """Whether every release the pin allows is older than ``release``."""
    if operator == "<":
        return version <= release
    if operator == "~=":  # ~=4.40 allows up to 5.0, ~=4.40.1 up to 4.41
        return (*version[:-2], version[-2] + 1) <= release if len(version) > 1 else False
    return version < release  # ==, ===, <=


def stale(word: str, target: tuple[int, int]) -> tuple[str, Fixed] | None:
    """(library, the release to pin) where ``word`` pins a release of a library in LIBRARIES
    that calls what ``target`` removed: the latest fix, which fixes the earlier ones too."""
    found = _PIN.match(word)
    if found is None or found.group(1).lower() not in LIBRARIES:
        return None
    library, operator, version = found.group(1).lower(), found.group(2), _version(found.group(3))
    if library in CALLS_FROM and _below(operator, version, CALLS_FROM[library]):
        return None  # a release from before the library called torch_xla
    lacking = [
        fixed for fixed in LIBRARIES[library] if fixed.gone_in <= target and _below(operator, version, fixed.release)
    ]
    return (library, max(lacking, key=lambda fixed: fixed.release)) if lacking else None  # the release fixing all


class LibraryPin(TextRule):
    id = "install-library-pin"
    fix = "none"
    words = tuple(LIBRARIES)
    summary = "A pin of accelerate, transformers or lightning that calls torch_xla APIs the target lacks: reported"
    examples = (
        Example(
            "pip install accelerate==0.27.2 'torch_xla[tpu]~=2.9.0'\n",
            todo_line("pin accelerate>=1.7.0", "install-library-pin")
            + "pip install accelerate==0.27.2 'torch_xla[tpu]~=2.9.0'\n",
            manual=("xm.xrt_world_size()",),
        ),
        Example("pip install 'transformers>=4.40'\n", "pip install 'transformers>=4.40'\n"),
        Example(  # a research repository's set-up: the library's release checked out of git
            "pip install 'torch_xla[tpu]~=2.9.0'\ngit clone https://github.com/huggingface/transformers.git\n"
            "cd transformers; git checkout tags/v4.20.1; pip install -e .\n",
            "pip install 'torch_xla[tpu]~=2.9.0'\ngit clone https://github.com/huggingface/transformers.git\n"
            + todo_line("pin transformers>=4.52.0", "install-library-pin")
            + "cd transformers; git checkout tags/v4.20.1; pip install -e .\n",
            manual=("git checkout tags/v4.20.1: releases of transformers",),
        ),
    )

    def word(self, rec, word, offset):
        if _for_torch_xla(rec):
            self._report(rec, offset, word.strip("'\""), word.strip("'\""))

    def command(self, rec, cmd, posix_sh):
        """A release checked out of the library's repository (``git clone --branch v4.20.1 URL``, or
        ``git checkout tags/v4.20.1`` in a file that clones it) and installed from the checkout
        (``pip install -e .``) is a pin of that release; a clone for its example scripts is not."""
        words = cmd.argv_text(rec.text)
        if words[:2] == ["git", "clone"]:
            library = next((_cloned(w) for w in words[2:] if _cloned(w)), None)
            branch = next((words[k + 1] for k, w in enumerate(words[:-1]) if w in ("--branch", "-b")), "")
        elif words[:2] == ["git", "checkout"] and len(words) > 2:
            libraries = {_cloned(m.group()) for m in _REPOSITORY.finditer(rec.text)}
            library, branch = (libraries.pop() if len(libraries) == 1 else None), words[-1]
        else:
            return
        tag = _TAG.match(branch)
        if library and tag and _INSTALLS_A_CHECKOUT.search(rec.text) and _for_torch_xla(rec):
            self._report(rec, cmd.argv()[0].start, f"{library}=={tag.group(1)}", " ".join(words))

    def _report(self, rec, offset: int, pin: str, shown: str) -> None:
        found = stale(pin, rec.options.target_version)
        if found is not None and not _trainer_unused(rec, found[0]):
            library, fixed = found
            release = ".".join(map(str, fixed.release))
            gone = rec.options.transformers_gone if library == "transformers" else ()
            rec.decide(
                self.id,
                offset,
                f"pin {library}>={release}" + (", and respell what it lacks" if gone else ""),
                f"{shown}: releases of {library} before {release} call {fixed.calls}, "
                f"which torch_xla {fixed.gone_in[0]}.{fixed.gone_in[1]} removed (AttributeError inside "
                f"{library}; read at {fixed.read}): pin {library}>={release}"
                + (
                    f". The code uses {' and '.join(gone)}, which that release lacks: use "
                    f"{' and '.join(TRANSFORMERS_GONE[name] for name in gone)}"
                    if gone
                    else ""
                ),
            )


def _for_torch_xla(rec) -> bool:
    """Whether the file's installs serve code that runs torch_xla: not a sub-project's, for code
    that runs none (code_trees.py)."""
    return rec.options.torch_xla_project or bool(INSTALLS_TORCH_XLA.search(rec.text))


# An install file that runs transformers' example scripts, which train with its Trainer.
_RUNS_TRAINER = re.compile(r"\brun_\w+\.py\b|\bxla_spawn\.py\b|\bTrainer\b")


def _trainer_unused(rec, library: str) -> bool:
    """Whether the pin is transformers' and the code it serves uses no Trainer or TrainingArguments,
    the only parts of transformers that call torch_xla (a model's code runs the same on 2.9), nor
    does the file run an example script that does."""
    return (
        library == "transformers" and rec.options.transformers_trainer is False and not _RUNS_TRAINER.search(rec.text)
    )


# The libraries' own repositories, and a release's tag (v4.20.1, tags/v4.20.1, 1.7.7).
_REPOSITORY = re.compile(
    r"github\.com[/:](?:huggingface/(?:transformers|accelerate)|(?:Lightning-AI|PyTorchLightning)/"
    r"(?:lightning|pytorch-lightning))\b",
    re.I,
)
_TAG = re.compile(r"^(?:tags/)?v?(\d+(?:\.\d+)+)$")
_INSTALLS_A_CHECKOUT = re.compile(r"\bpip3?\s+install\s+(?:-e\s+|--editable\s+)?\.|\bsetup\.py\s+(?:install|develop)\b")


def _cloned(word: str) -> str | None:
    """The library whose repository ``word`` names, as its pins name it; None for any other."""
    found = _REPOSITORY.search(word)
    return found.group().rpartition("/")[2].lower() if found else None
