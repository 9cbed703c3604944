"""spawn_site's lists of a tree's nodes, kept per node for the rules that ask at every spot:
the same nodes in the same order as walking the tree each time."""

from __future__ import annotations

import ast
import gc
import weakref
from pathlib import Path

from xrt2pjrt import file_caches
from xrt2pjrt.python import spawn_site

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "legacy_mnist" / "train.py"
SHAPES = '''
import torch_xla.core.xla_model as xm

@decorate(xm.get_ordinal())
def train(index, *args, flag=xm.xrt_world_size(), **kw):
    lam = lambda x=1: x + index
    class Inner:
        def method(self):
            return [y async for y in z] if (w := 2) else {k: v for k, v in kw.items()}
    try:
        pass
    except (ValueError, KeyError) as exc:
        raise RuntimeError(f"{exc!r:>10}") from exc
    match flag:
        case [1, *rest] | {"a": 2}:
            del rest
    return Inner
'''


def test_walk_lists_the_nodes_of_ast_walk_in_its_order():
    for tree in (ast.parse(SHAPES), ast.parse(EXAMPLE.read_text())):
        for node in ast.walk(tree):
            assert spawn_site.walk(node) == list(ast.walk(node))
            assert spawn_site.walk(node) == list(ast.walk(node))  # the kept list, asked again


def test_own_nodes_are_those_of_the_scope_and_not_of_the_scopes_it_defines():
    tree = ast.parse(SHAPES)
    train = spawn_site.functions(tree)[0]
    own = spawn_site.own_nodes(train)
    assert own == list(spawn_site.nodes_of(train.body)) and own is spawn_site.own_nodes(train)
    names = {node.id for node in own if isinstance(node, ast.Name)}
    assert "kw" not in names and "w" not in names  # inside Inner.method, a scope of its own
    assert {"lam", "Inner", "flag", "exc", "rest"} <= names


def test_holding_finds_the_statements_of_a_block_around_a_line_as_a_scan_does():
    tree = ast.parse(SHAPES + "a = 1; b = 2\nif a: c = 3\n" + EXAMPLE.read_text())
    blocks = [value for node in ast.walk(tree) for _, value in ast.iter_fields(node) if spawn_site.is_block(value)]
    for block in blocks:
        for line in range(1, block[-1].end_lineno + 2):
            scanned = [(k, s) for k, s in enumerate(block) if s.lineno <= line <= s.end_lineno]
            assert list(spawn_site.holding(block, line)) == scanned


def test_parents_of_types_and_own_of_say_what_walks_of_the_tree_say():
    tree = ast.parse(SHAPES + EXAMPLE.read_text())
    walked = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    assert spawn_site.parents(tree) == walked
    del walked
    for kinds in [(ast.Call,), (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef), (ast.keyword, ast.Name)]:
        assert spawn_site.of_type(tree, kinds) == [node for node in ast.walk(tree) if type(node) in kinds]
    for scope in (tree, *(node for node in ast.walk(tree) if isinstance(node, spawn_site._SCOPES))):
        for kind in (ast.Call, ast.If, ast.For):
            own = [node for node in spawn_site.own_nodes(scope) if type(node) is kind]
            assert sorted(map(id, spawn_site.own_of(tree, scope, kind))) == sorted(map(id, own))
    file_caches.forget()


def test_a_files_tree_goes_once_its_answers_are_forgotten():
    # (the parents noted in the walk once held the module: each file's tree stayed for good)
    tree = ast.parse(SHAPES)
    spawn_site.parents(tree), spawn_site.of_type(tree, (ast.Call,)), spawn_site.own_of(tree, tree, ast.Call)
    gone = weakref.ref(tree)
    file_caches.forget()
    del tree
    gc.collect()
    assert gone() is None
