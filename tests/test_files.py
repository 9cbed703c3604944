"""Discovery, decoding and atomic writes: the layer that must never lose a user's data."""

import codecs
import os
import stat

import pytest

from xrt2pjrt import files, rewriters


def _touch(path, text="x = 1\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_discover_honours_gitignore_and_skips_environments(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n*.gen.py\n")
    keep = _touch(tmp_path / "src" / "train.py")
    nested_ignore = _touch(tmp_path / "src" / "sub" / ".gitignore", "local.py\n")
    _touch(tmp_path / "src" / "sub" / "local.py")
    kept_sub = _touch(tmp_path / "src" / "sub" / "kept.py")
    _touch(tmp_path / "generated" / "a.py")
    _touch(tmp_path / "src" / "x.gen.py")
    _touch(tmp_path / "node_modules" / "m.py")
    _touch(tmp_path / ".tox" / "t.py")
    _touch(tmp_path / "myenv" / "pyvenv.cfg", "home = /usr\n")
    _touch(tmp_path / "myenv" / "lib" / "v.py")
    _touch(tmp_path / "build" / "b.py")
    script = _touch(tmp_path / "run_pod", "#!/bin/bash\necho hi\n")
    _touch(tmp_path / "notes.txt")

    found = files.discover([tmp_path]).targets

    assert found == sorted([(keep, "python"), (kept_sub, "python"), (script, "shell")], key=lambda item: str(item[0]))
    assert nested_ignore not in dict(found)


def test_explicit_file_is_processed_even_when_ignored(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n")
    target = _touch(tmp_path / "ignored.py")
    assert files.discover([target]).targets == [(target, "python")]


def test_a_missing_path_is_refused_and_the_others_still_taken(tmp_path):
    kept = _touch(tmp_path / "a.py")
    found = files.discover([tmp_path / "nope", kept])
    assert found.targets == [(kept, "python")]
    assert found.refused == [(tmp_path / "nope", "no such file or folder")]


@pytest.mark.parametrize(
    "name,kind",
    [
        ("a.py", "python"),
        ("Dockerfile", "dockerfile"),
        ("Dockerfile.tpu", "dockerfile"),
        ("ci.yaml", "yaml"),
        ("k.yml", "yaml"),
        ("README.md", "markdown"),
        ("doc.rst", "markdown"),
        ("nb.ipynb", "notebook"),
        ("x.sh", "shell"),
        ("x.bash", "shell"),
        ("pod.jsonnet", "jsonnet"),
        ("tpu.tf", "terraform"),
        ("prod.tfvars", "terraform"),
        ("requirements.txt", "requirements"),
        ("requirements-tpu.txt", "requirements"),
        ("constraints.txt", "requirements"),
        ("requirements.in", "requirements"),
        ("pyproject.toml", "metadata"),
        ("setup.cfg", "metadata"),
        ("other.toml", None),
        ("notes.txt", None),
        ("data.csv", None),
    ],
)
def test_kind_by_name_has_a_rewriter(tmp_path, name, kind):
    assert files.kind_of(_touch(tmp_path / name)) == kind
    assert kind is None or kind in rewriters.MODULES


@pytest.mark.parametrize(
    "raw,kind",
    [
        (b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\r\n", "python"),
        (codecs.BOM_UTF8 + b"x = 'h\xc3\xa9'\r\ny = 2\r\n", "python"),
        (b"export A=1\r\nexport B=2\r\n", "shell"),
        (b"mixed\r\nendings\n", "shell"),
        (b"no newline at end", "yaml"),
    ],
)
def test_decode_encode_round_trip_is_byte_identical(raw, kind):
    source = files.decode(raw, kind)
    assert "\r\n" not in source.text or not source.crlf
    assert source.encode(source.text) == raw


def test_latin1_cookie_is_honoured():
    source = files.decode(b"# coding: latin-1\ns = '\xe9'\n", "python")
    assert source.encoding == "iso-8859-1"
    assert "é" in source.text


def test_undecodable_bytes_name_the_line_and_column():
    with pytest.raises(files.DecodeError) as info:
        files.decode("ok = 1\nalso = 2\né = '".encode() + b"\xff\xfe'\n", "python")
    assert (info.value.line, info.value.column) == (3, 6)  # counted in characters: é is one


def test_write_atomic_keeps_mode_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "run.sh"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o751)
    files.write_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert os.listdir(tmp_path) == ["run.sh"]


def test_write_atomic_failure_leaves_original(tmp_path, monkeypatch):
    target = tmp_path / "train.py"
    target.write_bytes(b"original\n")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError):
        files.write_atomic(target, b"replacement\n")
    assert target.read_bytes() == b"original\n"
    assert os.listdir(tmp_path) == ["train.py"]


# Extensionless files with no shebang and .txt files, as the held-back counts of issue 32 found
# them: runbooks of commands and files meant to be sourced are shell; other texts are not.
_XLA_DIST = "python3 -m torch_xla.distributed.xla_dist --tpu=$TPU_NAME -- python3 train.py\n"


@pytest.mark.parametrize(
    "name, text, kind",
    [
        ("tpu_runbook", f"gcloud compute tpus create t --version=pytorch-1.8\n\n-----\n\n{_XLA_DIST}", "shell"),
        ("set_tpu_env", 'export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"\n', "shell"),
        ("cmd.txt", f"cd project\n{_XLA_DIST}", "shell"),
        # a log, notes: bash reads such lines as commands too, but they read as prose or a log
        ("results.txt", f"epoch 3: loss 0.25 on 8 cores, launched with\n{_XLA_DIST}", None),
        ("NOTES", f"Run it from the VM, it will not work elsewhere:\n{_XLA_DIST}", None),
        ("train_log.txt", f"2021-03-01 12:00 INFO launched\n{_XLA_DIST}", None),
        # not shell: a Pipfile, a Python script, notes in prose, a log, a Dockerfile or Makefile by another name
        ("Pipfile", '[packages]\ntorch = "==1.8.1"\ntorch_xla = "*"\n', None),
        ("train", "import torch_xla.core.xla_model as xm\nprint(xm.xrt_world_size())\n", None),
        ("run_log", "2021-03-01 12:00 INFO XRT_TPU_CONFIG=tpu_worker;0;10.0.0.2:8470\n", None),
        ("tpu_docker", f"FROM gcr.io/tpu-pytorch/xla:r1.8\nRUN {_XLA_DIST}", None),
        ("Makefile", f"train:\n\t{_XLA_DIST}", None),
    ],
)
def test_an_extensionless_file_is_shell_when_it_runs_xrt_era_commands(tmp_path, name, text, kind):
    assert files.kind_of(_touch(tmp_path / name, text)) == kind
