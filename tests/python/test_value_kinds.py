"""python/value_kinds.py: the kinds a local reading proves, on every branch, and None where
any branch is not followed."""

import ast

import pytest

from xrt2pjrt.python.value_kinds import DICT, NONE, NUMBER, SEQUENCE, TENSOR, TEXT, Reading

SOURCE = """\
import numpy as np
import torch

def step(model, t, u, loss, flags):
    total = 0
    count = len(flags)
    for x in loader:
        total += loss.item() * x.size(0)
    either = total if flags.ok else torch.zeros(1)
    rows = np.stack(u)
    print(t.shape, t.detach())
    JUDGED
    total = np.mean(rows)
"""


@pytest.mark.parametrize(
    "expression, kinds",
    [
        ("total", {NUMBER}),
        ("count / flags.n", {NUMBER}),
        ("either", {NUMBER, TENSOR}),
        ("t", {TENSOR}),
        ("t * total", {TENSOR}),
        ("model.state_dict()", {DICT}),
        ("[total, 'a', None]", {SEQUENCE}),
        ("f'{total}'", {TEXT}),
        ("None", {NONE}),
        ("torch.get_rng_state()", {TENSOR}),
        ("rows", None),
        ("u", None),
        ("x", None),
        ("flags.n / flags.m", None),
        ("np.mean(u) / count", None),
        ("{'rows': rows}", None),
        ("model", None),
    ],
)
def test_the_kinds_of_a_value_are_those_of_every_binding_before_it_and_none_when_one_is_unknown(expression, kinds):
    line = SOURCE.splitlines().index("    JUDGED") + 1
    tree = ast.parse(SOURCE.replace("JUDGED", f"print({expression})"))
    assert Reading(tree, line).kinds(ast.parse(expression, mode="eval").body) == (
        None if kinds is None else frozenset(kinds)
    )
