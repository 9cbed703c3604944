"""The YAML rewriter: shell inside Kubernetes / CI / Cloud Build files, and env settings.

PyYAML's composer gives every scalar's exact source span, so edits touch only the scalars
that change, in the style they were written in (plain, quoted, ``|`` block). Shell is:
the value of a script key (``run``, ``script``, ``command``, ...), each line of a script
list, and the argument after ``-c`` in an exec array. Env settings are Kubernetes
``env: [{name, value}]`` items, ``env:``/``environment:``/``variables:`` mappings and
docker-compose ``- NAME=value`` lists. An exec array goes to the text rules' ``exec_array``
hook, a mapping's keys to ``yaml_key`` (a GKE TPU-node annotation or resource: PJRT cannot
drive a TPU node), an ``image:`` to ``word``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import yaml as pyyaml

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rewriters import Outcome, SourceError, trigger_for
from xrt2pjrt.text import environment, shell
from xrt2pjrt.recorder import Edit, Recorder, dedent, indent, leave_todo_comments, merge_into
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.rule import rules
from xrt2pjrt.text.words import NAME

SCRIPT_KEYS = frozenset(
    {
        "run",
        "script",
        "before_script",
        "after_script",
        "commands",
        "command",
        "cmd",
        "entrypoint",
        "args",
        "pre",
        "post",
    }
)
# Keys whose list is one command's argv (Kubernetes, Compose, Cloud Build), not lines of a script.
EXEC_KEYS = frozenset({"command", "args", "entrypoint", "cmd"})
ENV_KEYS = frozenset({"env", "environment", "variables"})
# A command word that runs /bin/sh (dash on Debian and Ubuntu images), not bash.
SH = re.compile(r"(?:/usr)?(?:/bin/)?(?:sh|dash|ash)")
Scalar, Sequence, Mapping = pyyaml.ScalarNode, pyyaml.SequenceNode, pyyaml.MappingNode


def rewrite(text: str, options: Options) -> Outcome:
    try:
        documents = list(pyyaml.compose_all(text, Loader=pyyaml.SafeLoader))
    except pyyaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise SourceError(str(exc).splitlines()[0], line, column) from None
    bomb = _alias_bomb(documents)
    if bomb is not None:
        raise SourceError(
            f"its aliases repeat more than {ALIAS_NODES:,} nodes (an alias bomb): not read",
            bomb.start_mark.line + 1,
            bomb.start_mark.column + 1,
        )
    options = options.in_file(text)
    rec = Recorder(text, options)
    settings: list[EnvSetting] = []
    for doc in documents:
        if doc is not None:
            _walk(doc, None, rec, settings)
    environment.apply(settings, rec, lambda offset: "PJRT_DEVICE" in text[:offset])
    starts = sorted({line for doc in documents if doc is not None for line in _entry_lines(doc, text)})
    leave_todo_comments(rec, list(zip(starts, [line - 1 for line in starts[1:]] + [text.count("\n") + 1])))
    return rec.outcome()


def _entry_lines(node, text: str):
    """The lines that start an entry of a block collection (a key, a ``-`` item): a comment
    line can go above each. Not the lines in a block scalar (text) or a flow collection."""
    if isinstance(node, Mapping) and not node.flow_style:
        entries = [k for k, _ in node.value]
    elif isinstance(node, Sequence) and not node.flow_style:
        entries = list(node.value)
    else:
        return
    for entry in entries:
        start = entry.start_mark.index
        if re.fullmatch(r"[ \t]*(?:-[ \t]+)*", text[text.rfind("\n", 0, start) + 1 : start]):
            yield entry.start_mark.line + 1
    for child in [v for _, v in node.value] if isinstance(node, Mapping) else node.value:
        yield from _entry_lines(child, text)


# The nodes that aliases may add to a file's, read as the walks below read it: each alias
# repeats its anchor's nodes, and 600 bytes of aliases of aliases (nine levels) make
# hundreds of millions, which took minutes a level.
ALIAS_NODES = 100_000


def _alias_bomb(documents) -> pyyaml.Node | None:
    """The node at which walking ``documents`` as the rewriter does (aliases followed) has
    met more than ALIAS_NODES nodes beyond the file's own; None when it never does."""
    stack, own, met = [doc for doc in documents if doc is not None], set(), 0
    while stack:
        node = stack.pop()
        met += 1
        own.add(id(node))
        if met - len(own) > ALIAS_NODES:
            return node
        if isinstance(node, Mapping):
            stack += [part for pair in node.value for part in pair]
        elif isinstance(node, Sequence):
            stack += node.value
    return None


def check(text: str) -> str | None:
    """Why ``text`` is no YAML, or None. Composed, not loaded: a tag no loader here knows
    (GitLab's ``!reference``, CloudFormation's ``!Ref``) is the file's own business."""
    try:
        list(pyyaml.compose_all(text, Loader=pyyaml.SafeLoader))
    except pyyaml.YAMLError as exc:
        return str(exc).splitlines()[0]
    return None


def _walk(node, key: str | None, rec: Recorder, settings: list[EnvSetting], sh: bool = False) -> None:
    """``sh``: the shell in ``node`` runs under sh (the entry's entrypoint, command or shell is sh)."""
    if isinstance(node, Mapping):
        sh = _runs_sh(node)
        for k, v in node.value:
            name = k.value if isinstance(k, Scalar) else None
            if name in ENV_KEYS and isinstance(v, (Mapping, Sequence)):
                settings += _env_settings(v, rec.text)
            if name == "image" and isinstance(v, Scalar) and isinstance(v.value, str):
                for rule in rules(rec.options):  # a Kubernetes / Compose / CI container
                    rule.word(rec, v.value, v.start_mark.index)
            if isinstance(name, str) and rec.options.uses_torch(rec.text):
                for rule in rules(rec.options):
                    rule.yaml_key(rec, name, k.start_mark.index)
            _walk(v, name, rec, settings, sh)
    elif isinstance(node, Sequence):
        items = node.value
        for i, item in enumerate(items):
            after_c = i > 0 and isinstance(items[i - 1], Scalar) and items[i - 1].value == "-c"
            if isinstance(item, Scalar) and (after_c or (key in SCRIPT_KEYS and key not in EXEC_KEYS)):
                # ["/bin/sh", "-c", "…"]; after a leading "-c", the entry's entrypoint or command runs it
                runs_sh = _is_sh(items[i - 2]) if after_c and i >= 2 else sh
                _shell_scalar(item, rec, runs_sh)
            else:
                _walk(item, None, rec, settings)
        if key in EXEC_KEYS and not any(isinstance(i, Scalar) and i.value == "-c" for i in items):
            words = [i.value for i in items if isinstance(i, Scalar)]
            for rule in rules(rec.options):
                rule.exec_array(rec, node.start_mark.index, key, words)
    elif isinstance(node, Scalar) and key in SCRIPT_KEYS and isinstance(node.value, str):
        _shell_scalar(node, rec, sh)


def _is_sh(node) -> bool:
    """Whether a scalar (its first word) or a list (its first item) names sh."""
    if isinstance(node, Sequence):
        return bool(node.value) and _is_sh(node.value[0])
    return isinstance(node, Scalar) and bool(SH.fullmatch(str(node.value).split(" ")[0]))


def _runs_sh(node) -> bool:
    """Whether a mapping's shell runs under sh: Cloud Build's and Compose's ``entrypoint: /bin/sh``,
    Kubernetes' ``command: ["/bin/sh"]`` with its ``args``, GitHub Actions' ``shell: sh``."""
    return any(
        isinstance(k, Scalar) and k.value in ("entrypoint", "command", "shell") and _is_sh(v) for k, v in node.value
    )


def _shell_scalar(node, rec: Recorder, sh: bool = False) -> None:
    """Rewrite a scalar holding shell, keeping its YAML style; ``sh``: it runs under sh."""
    if node.tag != "tag:yaml.org,2002:str" or not trigger_for("shell").search(node.value):
        return
    text, start, end = rec.text, node.start_mark.index, node.end_mark.index
    options = _unmarked(node, rec)
    if node.style == "|":  # a literal block: its lines are the script's lines
        body_start = text.index("\n", start) + 1
        source = text[body_start:end]
        margin = re.match(r"[ \t]*", source.lstrip("\n")).group(0)
        outcome = shell.rewrite(dedent(source, margin), options, posix_sh=sh or None, comments=False)
        if outcome.text != dedent(source, margin):
            rec.edits.append(Edit(body_start, end, indent(outcome.text, margin)))
        merge_into(rec, outcome, rec.line(body_start) - 1)
        return
    outcome = shell.rewrite(node.value, options, posix_sh=sh or None, comments=False)
    if outcome.text != node.value:  # (a `>` block ends past its line break: the edit must not)
        rec.edits.append(Edit(start, _content_end(node), render(outcome.text, node.style)))
    merge_into(rec, outcome, rec.line(start) - 1)


def _unmarked(node, rec: Recorder) -> Options:
    """The options for the shell in ``node`` without the rules an ``ignore`` marker on its YAML
    lines keeps off: the line of a ``|`` block's header, every line of another scalar (the
    shell rewriter sees only markers inside a block, which are the script's comments)."""
    if not rec.suppressions:
        return rec.options
    lines = range(node.start_mark.line + 1, (node.start_mark.line if node.style == "|" else node.end_mark.line) + 2)
    return replace(
        rec.options,
        rules=frozenset(
            rule for rule in all_rules() if rec.options.on(rule) and not rec.suppressions.covers(rule, *lines)
        ),
    )


def render(value: str, style: str | None) -> str:
    """A scalar with this value, in the original style when that style can hold it."""
    if style is None and "\n" not in value and value == value.strip():
        try:
            if pyyaml.safe_load(value) == value and not re.search(r": | #|^[-?:,\[\]{}#&*!|>'\"%@`]", value):
                return value
        except pyyaml.YAMLError:
            pass
    if style == "'" and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value, ensure_ascii=False)  # a YAML double-quoted scalar


def _env_settings(node, text: str) -> list[EnvSetting]:
    out: list[EnvSetting] = []
    if isinstance(node, Mapping):  # env: {NAME: value}
        for k, v in node.value:
            if isinstance(k, Scalar) and NAME.fullmatch(str(k.value)):
                out.append(
                    EnvSetting(
                        k.value,
                        k.start_mark.index,
                        _rename_pair(k, v),
                        _delete_lines(text, k, v, node),
                        scope=id(node),
                        value=_value(v),
                    )
                )
        return out
    for item in node.value:
        if isinstance(item, Mapping):  # Kubernetes: - name: N / value: V
            fields = {k.value: (k, v) for k, v in item.value if isinstance(k, Scalar)}
            name = fields.get("name", (None, None))[1]
            if isinstance(name, Scalar) and NAME.fullmatch(str(name.value)):
                value = fields.get("value", (None, None))[1]
                source = fields.get("valueFrom") if value is None else None
                out.append(
                    EnvSetting(
                        name.value,
                        name.start_mark.index,
                        _rename_pair(name, value, source),
                        _delete_lines(text, item, item, node),
                        scope=id(node),
                        value=_value(value),
                    )
                )
        elif isinstance(item, Scalar) and isinstance(item.value, str):  # Compose: - NAME=value
            name = item.value.partition("=")[0]
            if NAME.fullmatch(name):
                has_value = "=" in item.value
                out.append(
                    EnvSetting(
                        name,
                        item.start_mark.index,
                        _rename_scalar(item, has_value),
                        _delete_lines(text, item, item, node),
                        form="set" if has_value else "pass",
                        scope=id(node),
                        value=item.value.partition("=")[2] if has_value else None,
                    )
                )
    return out


def _value(node) -> str | None:
    """An env entry's value as a string; None when it is not a scalar (valueFrom: …)."""
    return str(node.value) if isinstance(node, Scalar) else None


def _rename_pair(name_node, value_node, source=None):
    """Rename a NAME node and set its VALUE node (a mapping entry, or a Kubernetes env item).
    A Kubernetes item's ``valueFrom: …`` (a ConfigMap or Secret key: ``source``, its key and
    value nodes) becomes ``value: VALUE``: kept, it would give the new variable the XRT value
    that key holds (``PJRT_DEVICE=localservice;0;…``, which torch_xla cannot start with)."""

    def rename(name: str, value: str) -> list[Edit]:
        edits = [Edit(name_node.start_mark.index, name_node.end_mark.index, render(name, name_node.style))]
        if isinstance(value_node, Scalar):
            edits.append(Edit(value_node.start_mark.index, value_node.end_mark.index, render(value, value_node.style)))
        elif source is not None:
            key, node = source
            edits.append(
                Edit(key.start_mark.index, _content_end(node), f"{render('value', key.style)}: {render(value, None)}")
            )
        return edits

    return rename


def _content_end(node) -> int:
    """Where the text of ``node`` ends: its last character that is not a line break, blank
    or comment after it (PyYAML ends a block collection, or a block scalar, at what follows)."""
    if isinstance(node, Mapping) and not node.flow_style and node.value:
        key, value = node.value[-1]
        return max(_content_end(key), _content_end(value))
    if isinstance(node, Sequence) and not node.flow_style and node.value:
        return _content_end(node.value[-1])
    end = node.end_mark.index
    if isinstance(node, Scalar) and node.style in ("|", ">"):
        while end > node.start_mark.index and node.end_mark.buffer[end - 1] in " \t\r\n":
            end -= 1
    return end


def _rename_scalar(node, has_value: bool):
    def rename(name: str, value: str) -> list[Edit]:
        new = f"{name}={value}" if has_value else name
        return [Edit(node.start_mark.index, node.end_mark.index, render(new, node.style))]

    return rename


def _delete_lines(text: str, first, last, parent) -> list[Edit] | None:
    """Edits removing the whole lines from ``first`` to ``last`` in a block collection; None
    when they share a line with anything else (flow style, or the parent's only entry)."""
    if parent.flow_style or len(parent.value) < 2:
        return None
    start = text.rfind("\n", 0, first.start_mark.index) + 1
    head = text[start : first.start_mark.index].strip()
    if head not in ("", "-"):
        return None
    stop = _content_end(last)  # not its end_mark: PyYAML puts that past the next item's comment lines
    while stop > 0 and text[stop - 1] in " \t\n":
        stop -= 1
    end = text.find("\n", stop)
    end = len(text) if end < 0 else end + 1
    return [Edit(start, end, "")]
