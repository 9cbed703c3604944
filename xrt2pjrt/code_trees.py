"""Which code an install file serves: a requirements file, a Dockerfile or a setup script
installs for the code of the folder it stands in, and what that code needs of torch_xla.

A monorepo's sub-projects pin what they like: transformers' research projects pin torch 1.6
and transformers 3.5 for examples that never touch torch_xla, beside a root whose src/ does.
So each file that is not code belongs to the nearest folder above it whose tree holds code
(a Python file or notebook of the run): a ``requirements/`` folder with no code of its own
belongs to its parent, a sub-project's folder to itself; a notebook's installs serve its own
cells. What the install rules ask of "the project" (does it use torch_xla; which release does
its migrated code need) is asked of that tree. Each code file is read once, its first ``LOOK``
bytes: imports are at the top.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xrt2pjrt.registry import TRANSFORMERS_GONE

LOOK = 1_000_000
# transformers' Trainer, which calls torch_xla (not Lightning's pl.Trainer beside a transformers model).
_TRANSFORMERS_TRAINER = re.compile(
    rb"\bTrainingArguments\b|\btransformers\.Trainer\b"
    rb"|from\s+transformers(?:\.trainer)?\s+import\s+(?:\([^)]*|[^\n]*)\bTrainer\b"
)
_GONE_WORDS = tuple(word.encode() for word in TRANSFORMERS_GONE)  # (registry.py)
_TRANSFORMERS_GONE = re.compile(rb"\b(?:" + b"|".join(_GONE_WORDS) + rb")\b")
# Where the code names no torch_xla call the migration respells: every spelling it writes
# exists from the first release without XRT on.
NO_NEWER_NEED = (2, 1)


@dataclass(frozen=True)
class Code:
    """What the code of one tree says to its install files."""

    uses_torch_xla: bool = False
    # The oldest torch_xla that has every spelling the migration writes into this code; None
    # where no code of it uses torch_xla (nothing is known: the install rules take the target).
    needs: tuple[int, int] | None = None
    # The tree holds a copy of transformers' xla_spawn.py that the run migrates: its spawn of
    # ``nprocs=args.num_cores`` then takes None for ``--num_cores 8``, and the launch lines work.
    own_xla_spawn: bool = False
    # Whether the code uses transformers' Trainer or TrainingArguments, the parts of transformers
    # that call torch_xla (install-library-pin); None where no code was read.
    transformers_trainer: bool | None = None
    # The spellings of registry.TRANSFORMERS_GONE the code uses (install-library-pin).
    transformers_gone: tuple[str, ...] = ()

    def __or__(self, other: Code) -> Code:
        known = [needs for needs in (self.needs, other.needs) if needs is not None]
        trainer = [used for used in (self.transformers_trainer, other.transformers_trainer) if used is not None]
        return Code(
            self.uses_torch_xla or other.uses_torch_xla,
            max(known, default=None),
            self.own_xla_spawn or other.own_xla_spawn,
            any(trainer) if trainer else None,
            tuple(sorted({*self.transformers_gone, *other.transformers_gone})),
        )


class CodeTrees:
    """The ``Code`` of every folder of a run that holds code, in it or below it."""

    def __init__(self, targets: list[tuple[Path, str]], needs: Callable[[str], tuple[int, int]]):
        """``needs``: the oldest release a file's migrated code needs, from its text."""
        self._trees: dict[str, Code] = {}
        self._notebooks: dict[str, Code] = {}
        for path, kind in targets:
            if kind not in ("python", "notebook"):
                continue
            code = _read(path, needs)
            if kind == "notebook":
                self._notebooks[os.path.abspath(path)] = code
            folder = os.path.dirname(os.path.abspath(path))
            while True:
                self._trees[folder] = self._trees.get(folder, Code()) | code
                parent = os.path.dirname(folder)
                if parent == folder:
                    break
                folder = parent

    def of(self, path: Path) -> Code:
        """The ``Code`` of the nearest folder above ``path`` whose tree holds code; ``Code()`` where none does.
        A notebook installs for its own cells: a GPU notebook's ``!pip install`` beside a TPU script
        serves no torch_xla code."""
        if (own := self._notebooks.get(os.path.abspath(path))) is not None:
            return own
        folder = os.path.dirname(os.path.abspath(path))
        while folder not in self._trees:
            parent = os.path.dirname(folder)
            if parent == folder:
                return Code()
            folder = parent
        return self._trees[folder]


def _read(path: Path, needs: Callable[[str], tuple[int, int]]) -> Code:
    if not path.is_file():  # a FIFO would block the read
        return Code()
    try:
        with open(path, "rb") as f:
            head = f.read(LOOK)
    except OSError:
        return Code()  # the run reports it when it migrates the file
    # (a substring first: each regex costs more than the read on a file that has no match)
    trainer = b"Train" in head and _TRANSFORMERS_TRAINER.search(head) is not None
    gone = (
        tuple(sorted({found.decode() for found in _TRANSFORMERS_GONE.findall(head)}))
        if any(word in head for word in _GONE_WORDS)
        else ()
    )
    if b"torch_xla" not in head:
        return Code(transformers_trainer=trainer, transformers_gone=gone)
    spawn = path.name == "xla_spawn.py" and b"num_cores" in head
    return Code(True, needs(head.decode("utf-8", "replace")), spawn, trainer, gone)
