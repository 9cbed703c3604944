"""The machines and launchers around the code: TPU-node creation, the XRT-era conda env,
xla_spawn.py's --num_cores, configure_tpu_version, and a TPU software version in a .env file,
each in the forms a project writes them."""

from python_migrate import migrate
from text_migrate import rewrite_shell
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.mixed import markdown
from xrt2pjrt.text import dotenv, yaml as yaml_rewriter

ALL = Options(rules=frozenset(all_rules()))


def _rules(outcome) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in outcome.manual]


def test_tpu_node_creation_in_every_spelling():
    outcome = rewrite_shell(
        "ctpu up --name=$TPU -tf-version=pytorch-1.9\n"
        "gcloud alpha compute tpus create $TPU --version=pytorch-1.13 --accelerator-type=v3-8\n"
        "gcloud compute tpus execution-groups create --name=$TPU --tf-version=pytorch-nightly\n"
        "gcloud compute tpus tpu-vm create $TPU --version=tpu-ubuntu2204-base\n"
        "gcloud compute tpus tpu-vm ssh $TPU --worker=all --command='python3 train.py'\n"
    )
    assert _rules(outcome) == [("launch-tpu-node", 1), ("launch-tpu-node", 2), ("launch-tpu-node", 3)]
    assert "tpu-ubuntu2204-base" in outcome.manual[0].detail


def test_a_tpu_node_in_a_readme_block_and_a_ci_step():
    doc = "Create the TPU:\n\n```bash\nctpu up -tf-version=pytorch-1.13\n```\n"
    assert _rules(markdown.rewrite(doc, ALL)) == [("launch-tpu-node", 4)]
    ci = "steps:\n  - run: gcloud compute tpus create ci-tpu --version=pytorch-1.13 --zone=$ZONE\n"
    assert _rules(yaml_rewriter.rewrite(ci, ALL)) == [("launch-tpu-node", 2)]


def test_the_xrt_era_conda_env_outside_xla_dist():
    outcome = rewrite_shell(
        "source ~/.bashrc\nconda activate torch-xla-1.13\npython3 train.py\n"
        "conda activate torch-xla-nightly\nconda activate myenv\nsource activate torch-xla-1.8.1\n"
    )
    assert _rules(outcome) == [("launch-conda-env", 2), ("launch-conda-env", 4), ("launch-conda-env", 6)]


def test_xla_spawn_s_num_cores_in_every_form():
    outcome = rewrite_shell(
        "python xla_spawn.py --num_cores=8 run_mlm.py --tpu_num_cores 8\n"
        "python3 ../xla_spawn.py --num_cores 1 run_glue.py\n"
        "python xla_spawn.py run_glue.py --num_cores 8\n"
    )
    # the third passes --num_cores to run_glue.py, not to xla_spawn.py (whose default is 1)
    assert _rules(outcome) == [("launch-xla-spawn", 1)]
    assert "nprocs=8" in outcome.manual[0].detail


def test_configure_tpu_version_through_any_client():
    outcome = migrate("""\
        import cloud_tpu_client
        import torch_xla

        def switch(name):
            cloud_tpu_client.Client(name).configure_tpu_version(f'pytorch-{torch_xla.__version__}')
        """)
    assert [(f.rule, f.line) for f in outcome.manual] == [("launch-tpu-version", 5)]


def test_a_tpu_software_version_in_a_dotenv_file():
    outcome = dotenv.rewrite("TPU_PYTORCH_VERSION=1.13\nZONE=europe-west4-a\nTORCH_XLA_VERSION=2.9\n", ALL)
    assert _rules(outcome) == [("env-shell-pytorch-version", 1)]
    assert outcome.text.startswith("# TODO(xrt2pjrt): use a TPU VM with torch_xla 2.x [env-shell-pytorch-version]\n")
