"""The settings surface table (python/settings_surface.txt, generated from pytorch/xla's source
at each release tag by tools/settings_surface.py): how the generator reads C++ and Python,
and the table against the installed torch_xla 2.9 (and a torch_xla 2.8.1 where
XRT2PJRT_TORCH_XLA_28 names its python). The rules trust this table to say that a setting a
program makes does nothing on its target; a wrong entry is a false alarm or a silent miss."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from installed_names import naming
from tools import settings_surface as generator
from xrt2pjrt.python import settings_surface
from xrt2pjrt.python.settings_surface import Gone, gone, status

PYTHON_28 = os.environ.get("XRT2PJRT_TORCH_XLA_28")


# --- the lookups ----------------------------------------------------------------------------


def test_fp16_took_effect_up_to_2_4_and_only_warns_from_2_5():
    assert [status("XLA_USE_FP16", r) for r in ((1, 13), (2, 3), (2, 4), (2, 5), (2, 9))] == [
        "read",
        "read",
        "deprecated",
        "warns",
        "warns",
    ]
    assert gone("XLA_USE_FP16", (2, 9)) == Gone("XLA_USE_FP16", (2, 4), warns=True)
    assert gone("XLA_USE_FP16", (2, 9)).history == "only warns from torch_xla 2.5"
    assert gone("XLA_USE_FP16", (2, 4)) is None


def test_a_variable_removed_and_read_again_is_gone_only_where_it_was_removed():
    # XLA_USE_32BIT_LONG: deprecated in 2.4, only warned in 2.5, read again from 2.6
    assert gone("XLA_USE_32BIT_LONG", (2, 5)).warns and gone("XLA_USE_32BIT_LONG", (2, 6)) is None


def test_xrt_variables_are_read_by_nothing_from_2_1():
    assert gone("XRT_TPU_CONFIG", (2, 9)).history == "read by nothing from torch_xla 2.1"
    assert gone("GPU_NUM_DEVICES", (2, 9)).history == "read by nothing from torch_xla 2.9"
    assert gone("GPU_NUM_DEVICES", (2, 8)) is None


def test_what_no_release_read_is_never_gone():
    assert gone("MY_OWN_SETTING", (2, 9)) is None and status("MY_OWN_SETTING", (2, 9)) is None
    assert gone("XLA_USE_BF16", (2, 9)) is None and status("XLA_USE_BF16", (2, 9)) == "deprecated"


def test_a_value_a_release_called_deprecated_is_listed_as_name_and_value():
    assert status("PJRT_DEVICE=GPU", (2, 2)) == "deprecated" and status("PJRT_DEVICE", (2, 2)) == "read"


# --- the generator, on source written for these tests -----------------------------------------

CPP = r'''
namespace env {
inline constexpr char kEnvDevice[] = "MY_DEVICE";
}
// GetEnvString("COMMENTED_OUT", "")
std::string GetEnvPath(const char* name, const char* index_env = "MY_INDEX");

namespace {
void NeverCalled() { GetEnvBool("ONLY_IN_DEAD_CODE", false); }
}

void Setup() {
  auto device = sys_util::GetEnvString(env::kEnvDevice, "CPU");
  bool fast = sys_util::GetEnvBool(
      "MY_FAST", false);
  if (sys_util::GetEnvBool("MY_OLD_FLAG", false)) {
    std::cout << "MY_OLD_FLAG will be deprecated, use MY_FAST\n";
  }
  auto a = GetEnvPath("MY_PATH");
  auto b = GetEnvPath("MY_OTHER_PATH", "MY_OWN_INDEX");
}

PYBIND11_MODULE(_XLAC, m) { Setup(); }
'''

PYTHON = '''
import os
import warnings
import torch_xla.utils.utils as xu
import torch_xla.core.xla_env_vars as xenv

_RETIRED = ['MY_RETIRED_A', 'MY_RETIRED_B']


def _warn_retired():
  for name in _RETIRED:
    if os.environ.get(name):
      warnings.warn(f"The variable {name} is deprecated and does nothing")


def workers():
  if 'MY_WORKERS' in os.environ:
    return int(os.environ['MY_WORKERS'])
  return xu.getenv_as(xenv.CHIPS, int, 1)
'''

UTILS = '''
import os

def getenv_as(name, type, defval=None):
  env = os.environ.get(name, None)
  return defval if env is None else type(env)
'''


def _settings(files: dict[str, str]) -> dict[str, str]:
    return {name: found[0] for name, found in generator.release_settings(files).items()}


def test_cpp_reads_through_literals_constants_and_a_defaulted_parameter():
    found = _settings({"torch_xla/csrc/setup.cpp": CPP})
    assert found == {
        "MY_DEVICE": "read",
        "MY_FAST": "read",
        "MY_OLD_FLAG": "deprecated",
        "MY_PATH": "read",
        "MY_OTHER_PATH": "read",
        "MY_INDEX": "read",
    }
    # the defaulted parameter is read where a call leaves it out, on that call's line
    sites = generator.release_settings({"torch_xla/csrc/setup.cpp": CPP})
    assert sites["MY_INDEX"][1].line == CPP.splitlines().index('  auto a = GetEnvPath("MY_PATH");') + 1


def test_python_reads_through_torch_xla_s_own_readers_constants_and_loops():
    found = _settings(
        {
            "torch_xla/core/xla_env_vars.py": "CHIPS = 'MY_CHIPS'\n",
            "torch_xla/utils/utils.py": UTILS,
            "torch_xla/runtime.py": PYTHON,
        }
    )
    assert found == {"MY_WORKERS": "read", "MY_CHIPS": "read", "MY_RETIRED_A": "warns", "MY_RETIRED_B": "warns"}


def test_only_torch_xla_s_runtime_source_is_read():
    assert generator.is_runtime_source("torch_xla/csrc/runtime/pjrt_registry.cpp")
    assert generator.is_runtime_source("third_party/xla_client/env_vars.cc")
    assert not generator.is_runtime_source("torch_xla/csrc/runtime/env_hash_test.cpp")
    assert not generator.is_runtime_source("test/test_operations.py")
    assert not generator.is_runtime_source("setup.py")


def test_a_deprecation_names_what_comes_before_the_word():
    assert generator.named_deprecated("XLA_USE_SPMD is being deprecated. Use use_spmd() without XLA_USE_SPMD") == {
        "XLA_USE_SPMD"
    }
    assert generator.named_deprecated("PJRT_DEVICE=GPU is being deprecate. Use PJRT_DEVICE=CUDA") == {"PJRT_DEVICE=GPU"}
    assert generator.named_deprecated("XLA_FLAGS set") == set()


def test_every_line_of_the_table_cites_a_read_in_its_last_release():
    lines = [line for line in settings_surface.DATA.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) > 150
    for line in lines:
        name, releases, state, source = line.split()
        assert state in ("read", "deprecated", "warns"), line
        last = settings_surface.spelled(max(settings_surface._releases(releases)))
        assert source.startswith((f"v{last}.0:torch_xla/", f"v{last}.1:torch_xla/", f"v{last}.0:third_party/")), line


# --- against installed torch_xla releases ----------------------------------------------------


# Names the C++ library of a release holds that it never reads, so a name-in-the-binary check
# cannot tell them from a read (found by reading the release's source at its tag).
UNREAD_IN_BINARY = {
    (2, 8): {
        # Linked, never called: only CheckComputationStatus reaches them, and nothing calls it
        # (2.9's build drops the same dead code; 2.8.1's keeps it).
        "XLA_SAVE_HLO_FILE": "torch_xla/csrc/runtime/xla_util.cpp MaybeSaveHloGraph",
        "XLA_DUMP_HLO_GRAPH": "torch_xla/csrc/runtime/xla_util.cpp MaybeDumpHloGraph",
        # Named by the gRPC code of XLA that 2.8.1 links in, not by torch_xla's source.
        "TF_GRPC_DEFAULT_OPTIONS": "vendored gRPC channel arguments",
    },
}


def _held_to(release: tuple[int, int], python: str) -> list[str]:
    """What the table says of ``release`` that ``python``'s torch_xla contradicts: a name said to
    be read that none of its files names; a name said to be read by nothing that one names,
    but for xla_env_vars.py, which spells names out without reading them, and the C++ library's
    names in UNREAD_IN_BINARY; a name said to only warn that its C++ library still holds."""
    names = sorted(n for n in settings_surface.table() if "=" not in n)
    found = naming(names, python)
    unread = {os.path.join("core", "xla_env_vars.py")}
    wrong = []
    for name in names:
        said = status(name, release)
        if said and not found[name]:
            wrong.append(f"{name}: said to be {said}, named nowhere")
        if said is None and set(found[name]) - unread - (
            {"_XLAC"} if name in UNREAD_IN_BINARY.get(release, {}) else set()
        ):
            wrong.append(f"{name}: said to be read by nothing, named in {found[name]}")
        if said == "warns" and "_XLAC" in found[name]:
            wrong.append(f"{name}: said to only warn, named by the C++ library")
    return wrong


@pytest.mark.xla
def test_the_2_9_entries_are_the_installed_torch_xla_s():
    import torch_xla

    assert torch_xla.__version__.startswith("2.9.")
    assert _held_to((2, 9), sys.executable) == []


@pytest.mark.slow
@pytest.mark.skipif(
    not PYTHON_28,
    reason="needs torch_xla 2.8 to compare with: set XRT2PJRT_TORCH_XLA_28 to the python "
    "of a venv with torch 2.8.0 + torch_xla 2.8.1 (.ci/run makes .venv28)",
)
def test_the_2_8_entries_are_torch_xla_2_8_1_s():
    version = subprocess.run(
        [PYTHON_28, "-c", "import importlib.metadata as m; print(m.version('torch_xla'))"],
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout.strip()
    assert version == "2.8.1"
    assert _held_to((2, 8), PYTHON_28) == []


@pytest.mark.slow
@pytest.mark.xla
def test_fp16_does_nothing_on_2_9_but_warn_and_bf16_still_takes_effect():
    """``warns``: a setting that only warns leaves tensors in float32; ``deprecated``: one that
    warns and is read still changes them (shown in the HLO of one tensor on the XLA device)."""
    probe = (
        "import warnings, torch, torch_xla\n"
        "t = torch.ones(2, device=torch_xla.device())\n"
        "print(torch_xla._XLAC._get_xla_tensors_hlo([t * 2]))\n"
    )
    outputs = {}
    for variable in ("XLA_USE_FP16", "XLA_USE_BF16"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")} | {"PJRT_DEVICE": "CPU", variable: "1"}
        ran = subprocess.run(
            [sys.executable, "-W", "always", "-c", probe], env=env, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, ran.stderr
        outputs[variable] = ran
    fp16, bf16 = outputs["XLA_USE_FP16"], outputs["XLA_USE_BF16"]
    assert "f32[2]" in fp16.stdout and "f16[2]" not in fp16.stdout
    assert "'XLA_USE_FP16' is deprecated" in fp16.stderr
    assert "bf16[2]" in bf16.stdout
    assert "XLA_USE_BF16 will be deprecated" in bf16.stdout + bf16.stderr
