"""Settings that survive XRT with another meaning: environment variables, TPU runtime
versions and images, launcher options and pins (see the package docstring).

Sources are cited as ``torch_xla@TAG path:line`` (github.com/pytorch/xla). The variables
only XRT's client read were listed from every ``sys_util::GetEnv*`` call of
third_party/xla_client/*.cc at v1.13.0, less the ``XRT_*`` ones (xrt_variables.py) and the
ones torch_xla 2.9 still reads (a grep of v2.9.0's torch_xla/): what was left is
``XRT_CLIENT_ONLY``.
"""

from __future__ import annotations

from xrt2pjrt.meanings.entry import Meaning

# Read by XRT's client at v1.13.0 and by nothing in torch_xla 2.9: (name, where 1.13 read it, what it set).
XRT_CLIENT_ONLY = (
    ("XLA_TENSOR_ALLOCATOR_MAXSIZE", "xrt_computation_client.cc:65", "the size of XRT's device tensor allocator cache"),
    ("XLA_COMPILE_TIME_THRESHOLD", "xrt_computation_client.cc:198", "the compile time above which XRT saved the HLO"),
    ("XLA_SLOW_COMPILE_HLO_FOLDER", "xrt_computation_client.cc:201", "where XRT saved the HLO of slow compilations"),
    ("XLA_HANDLE_RELEASE_THREADS", "xrt_computation_client.cc:1249", "the threads releasing XRT's device handles"),
    ("XLA_IO_THREAD_POOL_SIZE", "thread_pool.cc:106", "the size of XRT's client I/O thread pool"),
)

# What each reporting rule says where code sets or reads one of these names: SHORT is the
# item's one line (what to do), ADVICE its detail (why).
SHORT = {
    "GPU_NUM_DEVICES": "stay on torch_xla 2.8 for GPUs",
    "TPU_NAME": "test xr.device_type() == 'TPU' instead",
    "TPU_IP_ADDRESS": "profile with xp.start_server(9012)",
}
ADVICE = {
    "GPU_NUM_DEVICES": ("GPU_NUM_DEVICES chose XLA:GPU; torch_xla 2.9 ignores it and runs on CPU: "
                        "stay on torch_xla 2.8 (PJRT_DEVICE=CUDA) for GPUs"),
    "TPU_NAME": ("TPU_NAME named a TPU node, and no TPU VM sets it: test xr.device_type() == 'TPU', "
                 "count devices with xr.world_size()"),
    "TPU_IP_ADDRESS": ("TPU_IP_ADDRESS was a TPU node's address, and no TPU VM sets it: the program runs on "
                       "the VM; profile with xp.start_server(9012) and trace localhost:9012"),
}

_XRT_CLIENT_ONLY = tuple(
    Meaning(
        name=name,
        under_xrt=f"{what} (torch_xla@v1.13.0 third_party/xla_client/{where})",
        on_target=(("2.1-2.9", "read by nothing: setting it does nothing"),),
        action="env-xrt-unprefixed",
        checked="run: tests/meanings/test_settings_table.py::test_no_installed_torch_xla_file_names_the_xrt_only_variables",
    )
    for name, where, what in XRT_CLIENT_ONLY
)

_TPU_VM_SETS = ("a TPU VM sets neither: torch_xla reads its TPU from the metadata server (tpu-env, "
                "worker-network-endpoints), or with TPU_SKIP_MDS_QUERY from TPU_ACCELERATOR_TYPE, "
                "TPU_PROCESS_BOUNDS, TPU_WORKER_ID and TPU_WORKER_HOSTNAMES")
_TPU_VM_SOURCE = ("source: torch_xla@v2.9.0 torch_xla/_internal/tpu.py:89 (metadata), :166-176 (the variables), "
                  ":216-227 (worker hostnames); neither name in torch_xla/")

MEANINGS: tuple[Meaning, ...] = (
    Meaning(
        name="GPU_NUM_DEVICES",
        under_xrt="the number of local GPUs XRT served: setting it chose XLA:GPU "
                  "(torch_xla@v1.13.0 third_party/xla_client/computation_client.cc:237)",
        on_target=(
            ("2.1", "set without PJRT_DEVICE, it selects PJRT_DEVICE=GPU (torch_xla@v2.1.0 torch_xla/runtime.py:43)"),
            ("2.2-2.8", "set without PJRT_DEVICE, it selects PJRT_DEVICE=CUDA, and CUDA needs it "
                        "(torch_xla@v2.8.0 torch_xla/runtime.py:66, torch_xla/_internal/gpu.py:12)"),
            ("2.9", "ignored: the program runs on CPU (torch_xla@v2.9.0 torch_xla/runtime.py:70)"),
        ),
        action="env-gpu-num-devices",
        checked="run: tests/meanings/test_settings_table.py::test_gpu_num_devices_runs_on_cpu",
    ),
    Meaning(
        name="TPU_NAME",
        under_xrt="the TPU node's name, which users exported for the XRT client and tools to find it; "
                  "code took it as a TPU test (8 cores if set)",
        on_target=(("2.1-2.9", f"read by nothing; {_TPU_VM_SETS}"),),
        action="env-tpu-node-address",
        checked=_TPU_VM_SOURCE,
    ),
    Meaning(
        name="TPU_IP_ADDRESS",
        under_xrt="the TPU node's address: XRT_TPU_CONFIG's tpu_worker;0;IP:8470 and the profiler's IP:8466",
        on_target=(("2.1-2.9", f"read by nothing; {_TPU_VM_SETS}; the profiler listens where "
                               "xp.start_server(port) runs, on the VM"),),
        action="env-tpu-node-address",
        checked=_TPU_VM_SOURCE,
    ),
    *_XRT_CLIENT_ONLY,
    Meaning(
        name="TPUVM_MODE",
        under_xrt="told XRT's client it ran on a TPU VM "
                  "(torch_xla@v1.13.0 third_party/xla_client/xrt_computation_client.cc:161)",
        on_target=(("2.1-2.9", "ignored at run time, but a build of torch_xla from source reads it: "
                               "TPUVM_MODE=1 adds bazel's --config=tpu (torch_xla@v2.9.0 build_util.py:18)"),),
        action="env-shell-xrt-unused",
        checked="source: torch_xla@v2.9.0 build_util.py:18; run: "
                "tests/meanings/test_settings_table.py::test_tpuvm_mode_is_read_only_by_the_build",
    ),
    Meaning(
        name="tpu-vm-pt-1.13",
        under_xrt="a TPU VM runtime version (also tpu-vm-v4-pt-1.13, and RUNTIME_VERSION= in scripts) whose "
                  "image holds torch and torch_xla 1.13",
        on_target=(("2.1-2.9", "still an image with torch_xla 1.13 on XRT: migrated code fails there; "
                               "create the VM with a tpu-ubuntu2204-base (v4: tpu-vm-v4-base) image and pip install"),),
        action="install-xrt-era-release",
        checked="run: tests/meanings/test_settings_table.py::test_runtime_versions_name_an_xrt_era_release",
    ),
    Meaning(
        name="gcr.io/tpu-pytorch/xla:r1.13_*",
        under_xrt="the XRT-era images of torch_xla 1.x",
        on_target=(("2.1-2.9", "still torch_xla 1.x; today's images are xla:r2.9.0_* at "
                               "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker"),),
        action="install-xrt-era-release",
        checked="run: tests/rules/install/test_install_xrt_era_release.py",
    ),
    Meaning(
        name="torch==1.13",
        under_xrt="the torch that torch_xla 1.13 was built against: a requirements file pinned it alone, "
                  "with torch_xla installed elsewhere (a TPU VM image, a wheel URL)",
        on_target=(("2.1-2.9", "in a project that uses torch_xla, it brings back torch 1.13, which no torch_xla "
                               "without XRT matches (each torch_xla 2.x wants the torch of its own release)"),),
        action="install-xrt-era-release",
        checked="run: tests/rules/install/test_install_xrt_era_release.py::"
                "test_a_lone_torch_1_pin_is_reported_in_a_project_that_uses_torch_xla",
    ),
    Meaning(
        name="--conda-env",
        under_xrt="xla_dist's option: the conda env to activate on each worker (torch-xla-1.13, torch-xla-nightly on "
                  "the XRT-era VM images) before the command",
        on_target=(("2.1-2.9", "conda activate of that env still brings back its torch_xla 1.x: "
                               "the migrated program then runs on XRT's release"),),
        action="launch-xla-dist",
        checked="run: tests/rules/launch/test_launch_xla_dist.py",
    ),
)
