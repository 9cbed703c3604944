"""Every text fixture pair, whatever its kind (tests/fixtures/text/<kind>/).

``before`` becomes ``expected`` exactly, with exactly the manual items listed; the result
passes its kind's own check (``bash -n``, YAML loads, notebook JSON loads, each rewritten
code block parses); and a second pass changes nothing. The behaviour of the results (what
runs where) is tested per kind in tests/text/test_<kind>.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xrt2pjrt import files, rewriters, width
from xrt2pjrt.registry import Options, all_rules

FIXTURES = Path(__file__).parents[1] / "fixtures" / "text"
NOTHING = ()
OLD_IMAGE = "XRT-era gcr.io/tpu-pytorch registry"
CONDA_ENV = (
    "holds torch_xla 1.x",
)  # xla_dist's --conda-env (text/xla_dist.py)  # the fixtures' docker images are XRT-era ones (text/installs.py)

# (before, expected, options, substrings of the manual items, one per item)
CASES = [
    ("shell/pod_launch.sh", "shell/pod_launch.expected.sh", {}, NOTHING),
    (
        "shell/pod_launch.sh",
        "shell/pod_launch.xrt2pjrt.expected.sh",
        {"launcher": "xrt2pjrt", "zone": "us-central1-a"},
        ("'$HOME/logs' expanded on each worker under xla_dist",),
    ),
    # the training script the command runs is the XRT-era image's copy
    (
        "shell/no_space_backslash.sh",
        "shell/no_space_backslash.expected.sh",
        {},
        ("shipped with torch-xla-1.13", *CONDA_ENV),
    ),
    ("shell/docker.sh", "shell/docker.expected.sh", {}, (OLD_IMAGE,)),
    (
        "shell/docker.sh",
        "shell/docker.zone.expected.sh",
        {"zone": "europe-west4-a", "project": "my-proj"},
        (OLD_IMAGE,),
    ),
    ("shell/path_form.sh", "shell/path_form.expected.sh", {}, NOTHING),
    ("shell/abbreviated_flags.sh", "shell/abbreviated_flags.expected.sh", {}, CONDA_ENV),
    ("shell/no_separator.sh", "shell/no_separator.expected.sh", {}, NOTHING),
    (
        "shell/env_vars.sh",
        "shell/env_vars.expected.sh",
        {},
        ("remote TPU node", "XRT_SHARD_ORDINAL is read here"),  # (not the echo of it)
    ),
    ("shell/cpu_topology.sh", "shell/cpu_topology.expected.sh", {}, NOTHING),
    (
        "shell/untranslatable.sh",
        "shell/untranslatable.expected.sh",
        {},
        (
            "--vm names TPU-node VMs",
            "unknown xla_dist flag --num-cores",
            "xla_dist inside another command's argument",
            "docker and conda flags together",
            "no command to run after `--`",
            "xla_dist inside a here-document",
            "XRT_TPU_CONFIG set inside a here-document",
        ),
    ),
    ("dockerfile/Dockerfile", "dockerfile/Dockerfile.expected", {}, (OLD_IMAGE, "exec form")),
    ("dockerfile/Dockerfile.cpu", "dockerfile/Dockerfile.cpu.expected", {}, ("XRT_SHARD_WORLD_SIZE is read here",)),
    ("yaml/train-job.yaml", "yaml/train-job.yaml.expected", {}, (OLD_IMAGE, OLD_IMAGE, "exec array")),
    ("yaml/ci.yml", "yaml/ci.yml.expected", {}, NOTHING),
    (
        "markdown/README.md",
        "markdown/README.md.expected",
        {},
        ("no command to run after `--`", "shipped with torch-xla-nightly"),
    ),
    ("markdown/guide.rst", "markdown/guide.rst.expected", {}, (OLD_IMAGE,)),
    ("notebook/pod_training.ipynb", "notebook/pod_training.ipynb.expected", {}, NOTHING),
]


@pytest.mark.parametrize("before, expected, options, manual", CASES, ids=[c[1] for c in CASES])
def test_fixture_pair(before, expected, options, manual):
    kind = files.kind_of(FIXTURES / before)
    module = rewriters.module_for(kind)
    # every fix, unsafe ones too; the width of a project without settings
    opts = Options(
        rules=frozenset(all_rules()), unsafe_fixes=True, width=width.for_kind(kind, width.Width()), **options
    )
    outcome = module.rewrite((FIXTURES / before).read_text(), opts)
    assert outcome.text == (FIXTURES / expected).read_text()
    assert outcome.changes or outcome.manual, "a fixture shows a change or a report"
    assert len(outcome.manual) == len(manual), outcome.manual
    for item, text in zip(outcome.manual, manual):
        assert text in f"{item.message} {item.detail}", (text, item)
    assert module.check(outcome.text) is None
    again = module.rewrite(outcome.text, opts)
    assert again.text == outcome.text and again.changes == []


def test_every_fixture_is_used():
    used = {c[0] for c in CASES} | {c[1] for c in CASES} | {"jsonnet/pod-test.libsonnet"}
    on_disk = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.is_file()}
    assert on_disk == used


def test_jsonnet_is_reported_never_rewritten():
    """Jsonnet would have to be evaluated to be rewritten: every XRT place is reported instead."""
    text = (FIXTURES / "jsonnet" / "pod-test.libsonnet").read_text()
    module = rewriters.module_for(files.kind_of(FIXTURES / "jsonnet" / "pod-test.libsonnet"))
    outcome = module.rewrite(text, Options(rules=frozenset(all_rules()), unsafe_fixes=True))
    assert outcome.text == text and outcome.changes == []
    assert [(f.rule, f.line) for f in outcome.manual] == [
        ("launch-xla-dist", 6),
        ("env-shell-xrt-tpu-config", 10),
        ("env-shell-xrt-cpu", 11),
    ]
    assert "set PJRT_DEVICE=TPU instead" in outcome.manual[1].message


def test_a_gke_tpu_node_in_a_jsonnet_config_is_reported_as_in_yaml():
    # pytorch/xla's 1.x k8s test configs: a TPU node's annotation and resource; the YAML of the
    # same job was reported, the jsonnet not
    text = (
        'local tpu = { "tf-version.cloud-tpus.google.com": "pytorch-1.13" };\n'
        '{ resources: { limits: { "cloud-tpus.google.com/v3": 8 } }, env: [{ name: "XRT_TPU_CONFIG" }] }\n'
    )
    module = rewriters.module_for("jsonnet")
    outcome = module.rewrite(text, Options(rules=frozenset(all_rules()), unsafe_fixes=True))
    nodes = [(f.line, f.detail) for f in outcome.manual if "GKE TPU node" in f.detail]
    assert [line for line, _ in nodes] == [1, 2]
    assert nodes[0][1].startswith("`tf-version.cloud-tpus.google.com` in a jsonnet config: a GKE TPU node")


# A TPU node made by Terraform, with the client VM whose startup script pointed XRT at it.
TERRAFORM_NODE = """\
resource "google_compute_instance" "trainer" {
  machine_type            = "n1-highmem-16"
  metadata_startup_script = <<-EOT
    pip install torch==1.12.0 torch_xla==1.12
    export XRT_TPU_CONFIG="tpu_worker;0;${google_tpu_node.v3.network_endpoints[0].ip_address}:8470"
  EOT
}

resource "google_tpu_node" "v3" {
  name               = "trainer-tpu"
  accelerator_type   = "v3-8"
  tensorflow_version = var.torch_xla_release
  scheduling_config {
    preemptible = true
  }
}

resource "google_tpu_node" "serving" {
  name               = "tf-serving"
  tensorflow_version = "2.8.0"
}
"""


def _terraform(text: str) -> list[tuple[str, int]]:
    module = rewriters.module_for(files.kind_of(Path("infra/main.tf")))
    outcome = module.rewrite(text, Options(rules=frozenset(all_rules()), unsafe_fixes=True))
    assert outcome.text == text and outcome.changes == []
    return [(f.rule, f.line) for f in outcome.manual]


def test_a_terraform_tpu_node_is_reported_with_its_startup_script_never_rewritten():
    assert _terraform(TERRAFORM_NODE) == [
        ("install-xrt-era-release", 4),
        ("env-shell-xrt-tpu-config", 5),
        ("launch-tpu-node", 9),  # not TensorFlow's node below
    ]


def test_a_tpu_nodes_pytorch_release_set_apart_is_reported():
    # a .tfvars value, or a variable's default: the release the node resource reads
    assert _terraform('zone = "us-central1-f"\ntorch_xla_release = "pytorch-1.12"\n') == [("launch-tpu-node", 2)]
    assert _terraform('variable "v" {\n  default = "pytorch-nightly"\n}\n') == [("launch-tpu-node", 2)]
    assert _terraform('variable "v" {\n  default = "2.8.0"\n}\n') == []


def test_a_tpu_vm_of_an_xrt_era_image_is_reported():
    text = 'resource "google_tpu_v2_vm" "vm" {\n  runtime_version = "tpu-vm-pt-1.13"\n}\n'
    assert _terraform(text) == [("install-xrt-era-release", 2)]
    assert _terraform(text.replace("tpu-vm-pt-1.13", "tpu-ubuntu2204-base")) == []


def test_a_tpu_node_of_a_release_set_elsewhere_is_pytorchs_only_in_a_pytorch_file():
    node = 'resource "google_tpu_node" "tpu" {\n  tensorflow_version = var.release\n}\n'
    assert _terraform(node) == []  # TensorFlow's, as far as anything here says
    assert _terraform("# trains with torch_xla\n" + node) == [("launch-tpu-node", 2)]
