"""IPython's calls in Python: a notebook exported to .py (nbconvert's "download as .py")
keeps each magic as the call IPython makes of it, ``get_ipython().system('pip install ...')``.

Their text arguments are commands and cells, not Python strings: the rewriter of files that
hold code of several kinds (mixed/) migrates them as what they run, and a Python rule that
reads strings leaves them alone (``is_magic_call``).
"""

from __future__ import annotations

import ast

import libcst as cst

# The methods of IPython's shell an exported notebook calls, and the arguments that are text.
METHODS = {"system": 1, "getoutput": 1, "run_line_magic": 2, "run_cell_magic": 3}


def is_magic_call(node: cst.CSTNode | None) -> bool:
    """Whether a libcst node is a ``get_ipython().METHOD(...)`` call, whose text arguments
    are read as what they run (a rule reading strings leaves them alone)."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in METHODS
        and isinstance(node.func.value, cst.Call)
        and isinstance(node.func.value.func, cst.Name)
        and node.func.value.func.value == "get_ipython"
        and not node.func.value.args
    )


def is_ipython_call(node: ast.AST) -> bool:
    """``is_magic_call`` for an ``ast`` node."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in METHODS
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
        and not node.func.value.args
    )
