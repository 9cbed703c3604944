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
from xrt2pjrt.report import Advice

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
    "GPU_NUM_DEVICES": (
        "GPU_NUM_DEVICES chose XLA:GPU; torch_xla 2.9 ignores it and runs on CPU: "
        "stay on torch_xla 2.8 (PJRT_DEVICE=CUDA) for GPUs"
    ),
    "TPU_NAME": (
        "TPU_NAME named a TPU node, and no TPU VM sets it: test xr.device_type() == 'TPU', "
        "count devices with xr.world_size()"
    ),
    "TPU_IP_ADDRESS": (
        "TPU_IP_ADDRESS was a TPU node's address, and no TPU VM sets it: the program runs on "
        "the VM; profile with xp.start_server(9012) and trace localhost:9012"
    ),
}

# Settings a torch_xla 2.x release still reads with a deprecation warning, or reads only to
# warn (python/settings_surface.txt says which, release by release): what the rules say where
# code sets one, for a target that warns about it. ``do``: the item's line; ``more``: why.
_BF16 = (
    "convert the model and its inputs to bfloat16 (model.to(torch.bfloat16)), or compute under "
    "torch.autocast('xla', dtype=torch.bfloat16)"
)
WARNED = {
    "XLA_USE_FP16": Advice(
        "no effect from 2.5: cast to float16",
        "XLA_USE_FP16=1 kept every float tensor as float16 on the device up to torch_xla 2.4; from 2.5 it only "
        "warns that it is deprecated and the program computes in float32, silently: cast the model and inputs "
        "(model.to(torch.float16)) or compute under torch.autocast('xla', dtype=torch.float16) (on TPU bfloat16 "
        "is the native half type), or drop it to keep float32",
    ),
    "XLA_DOWNCAST_FP16": Advice(
        "no effect from 2.5: cast to float16",
        "XLA_DOWNCAST_FP16=1 stored float32 as float16 (and float64 as float32) on the device up to torch_xla 2.4; "
        "from 2.5 it only warns and the program computes in float32: cast the model and inputs to torch.float16, or "
        "drop it to keep float32",
    ),
    "XLA_USE_BF16": Advice(
        "deprecated: cast the model to bf16",
        f"XLA_USE_BF16=1 still stores float tensors as bfloat16 on torch_xla 2.4-2.9, with a deprecation notice on "
        f"every run, and XLA_USE_FP16 went silently in 2.5 after such a notice: {_BF16}",
    ),
    "XLA_DOWNCAST_BF16": Advice(
        "deprecated: cast the model to bf16",
        f"XLA_DOWNCAST_BF16=1 still stores float32 as bfloat16 (float64 as float32) on torch_xla 2.4-2.9, with a "
        f"deprecation notice on every run: {_BF16}",
    ),
    "XLA_USE_32BIT_LONG": Advice(
        "deprecated: make int32 tensors",
        "XLA_USE_32BIT_LONG=1 still stores int64 tensors as int32 on the device (torch_xla 2.6-2.9, with a "
        "deprecation notice; 2.5 only warned and ignored it): create the tensors as torch.int32 where 64 bits are "
        "not needed",
    ),
    "XLA_USE_SPMD": Advice(
        "deprecated: call xr.use_spmd() first",
        "torch_xla 2.1-2.9 still read XLA_USE_SPMD=1, and warn that it is deprecated: call "
        "torch_xla.runtime.use_spmd() at the start of the program, before any tensor is on the device",
    ),
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

_TPU_VM_SETS = (
    "a TPU VM sets neither: torch_xla reads its TPU from the metadata server (tpu-env, "
    "worker-network-endpoints), or with TPU_SKIP_MDS_QUERY from TPU_ACCELERATOR_TYPE, "
    "TPU_PROCESS_BOUNDS, TPU_WORKER_ID and TPU_WORKER_HOSTNAMES"
)
_TPU_VM_SOURCE = (
    "source: torch_xla@v2.9.0 torch_xla/_internal/tpu.py:89 (metadata), :166-176 (the variables), "
    ":216-227 (worker hostnames); neither name in torch_xla/"
)

MEANINGS: tuple[Meaning, ...] = (
    Meaning(
        name="GPU_NUM_DEVICES",
        under_xrt="the number of local GPUs XRT served: setting it chose XLA:GPU "
        "(torch_xla@v1.13.0 third_party/xla_client/computation_client.cc:237)",
        on_target=(
            ("2.1", "set without PJRT_DEVICE, it selects PJRT_DEVICE=GPU (torch_xla@v2.1.0 torch_xla/runtime.py:43)"),
            (
                "2.2-2.8",
                "set without PJRT_DEVICE, it selects PJRT_DEVICE=CUDA, and CUDA needs it "
                "(torch_xla@v2.8.0 torch_xla/runtime.py:66, torch_xla/_internal/gpu.py:12)",
            ),
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
        on_target=(
            (
                "2.1-2.9",
                f"read by nothing; {_TPU_VM_SETS}; the profiler listens where xp.start_server(port) runs, on the VM",
            ),
        ),
        action="env-tpu-node-address",
        checked=_TPU_VM_SOURCE,
    ),
    *_XRT_CLIENT_ONLY,
    Meaning(
        name="XLA_USE_FP16",
        under_xrt="kept every float tensor as float16 on the device (torch_xla@v1.13.0 torch_xla/csrc/tensor_util.cpp:82); "
        "XLA_DOWNCAST_FP16 likewise stored float32 as float16",
        on_target=(
            ("2.1-2.3", "the same"),
            (
                "2.4",
                "the same, with a notice that it will be deprecated (torch_xla@v2.4.0 torch_xla/csrc/dtype.cpp:22)",
            ),
            (
                "2.5-2.9",
                "only warns that it is deprecated: the program computes in float32, silently "
                "(torch_xla@v2.9.0 torch_xla/__init__.py:176)",
            ),
        ),
        action="env-deprecated",
        checked="run: tests/python/test_settings_surface.py::test_fp16_does_nothing_on_2_9_but_warn_and_bf16_still_takes_effect",
    ),
    Meaning(
        name="XLA_USE_BF16",
        under_xrt="stored float tensors as bfloat16 on the device (torch_xla@v1.13.0 torch_xla/csrc/tensor_util.cpp:74); "
        "XLA_DOWNCAST_BF16 stored float32 as bfloat16",
        on_target=(
            ("2.1-2.3", "the same"),
            (
                "2.4-2.9",
                "the same, with a deprecation notice on every run (torch_xla@v2.9.0 "
                "torch_xla/csrc/dtype.cpp:11): cast the model to bfloat16 instead",
            ),
        ),
        action="env-deprecated",
        checked="run: tests/python/test_settings_surface.py::test_fp16_does_nothing_on_2_9_but_warn_and_bf16_still_takes_effect",
    ),
    Meaning(
        name="XLA_USE_SPMD",
        under_xrt="turned SPMD on in torch_xla 2.0, the last release with XRT (torch_xla@v2.0.0 torch_xla/core/xla_model.py:241)",
        on_target=(
            (
                "2.1-2.9",
                "still read, and deprecated: torch_xla.runtime.use_spmd() turns it on "
                "(torch_xla@v2.9.0 torch_xla/runtime.py:200)",
            ),
        ),
        action="env-use-spmd",
        checked="run: tests/rules/env/test_env_use_spmd.py::test_the_call_turns_spmd_on_as_the_variable_did",
    ),
    Meaning(
        name="PJRT_DEVICE=GPU",
        under_xrt="the PJRT name of the GPU device in torch_xla 2.0-2.1, which GPU_NUM_DEVICES also chose "
        "(torch_xla@v2.1.0 torch_xla/runtime.py:45)",
        on_target=(
            ("2.1", "the GPU device"),
            ("2.2", "deprecated: CUDA is its name (torch_xla@v2.2.0 torch_xla/runtime.py:118)"),
            (
                "2.3-2.8",
                "refused: Unknown PJRT_DEVICE 'GPU' (torch_xla@v2.8.1 "
                "torch_xla/csrc/runtime/pjrt_registry.cpp:219); CUDA is the GPU device",
            ),
            ("2.9", "refused: No PjRtPlugin registered for: GPU"),
        ),
        action="env-pjrt-device-gpu",
        checked="run: tests/rules/env/test_env_pjrt_device_gpu.py::test_torch_xla_2_9_refuses_both_gpu_names",
    ),
    Meaning(
        name="PJRT_DEVICE=CUDA",
        under_xrt="no such device: XRT found GPUs with GPU_NUM_DEVICES",
        on_target=(
            ("2.2-2.8", "the GPU device (torch_xla@v2.8.1 torch_xla/csrc/runtime/pjrt_registry.cpp:152)"),
            ("2.9", "refused: No PjRtPlugin registered for: CUDA; stay on torch_xla 2.8 for GPUs"),
        ),
        action="env-pjrt-device-gpu",
        checked="run: tests/rules/env/test_env_pjrt_device_gpu.py::test_torch_xla_2_9_refuses_both_gpu_names",
    ),
    Meaning(
        name="XLA_TRIM_GRAPH_SIZE, PJRT_ALLOCATOR_FRACTION, XLA_USE_IFRT, ...",
        under_xrt="torch_xla settings some release read (python/settings_surface.txt cites where)",
        on_target=(
            (
                "2.1-2.9",
                "read by nothing from the release after the last that read it (XLA_TRIM_GRAPH_SIZE "
                "after 2.4: torch_xla@v2.4.0 torch_xla/csrc/init_python_bindings.cpp:798): setting "
                "one does nothing",
            ),
        ),
        action="env-gone-setting",
        checked="run: tests/python/test_settings_surface.py::test_the_2_9_entries_are_the_installed_torch_xla_s",
    ),
    Meaning(
        name="TPUVM_MODE",
        under_xrt="told XRT's client it ran on a TPU VM "
        "(torch_xla@v1.13.0 third_party/xla_client/xrt_computation_client.cc:161)",
        on_target=(
            (
                "2.1-2.9",
                "ignored at run time, but a build of torch_xla from source reads it: "
                "TPUVM_MODE=1 adds bazel's --config=tpu (torch_xla@v2.9.0 build_util.py:18)",
            ),
        ),
        action="env-shell-xrt-unused",
        checked="source: torch_xla@v2.9.0 build_util.py:18; run: "
        "tests/meanings/test_settings_table.py::test_tpuvm_mode_is_read_only_by_the_build",
    ),
    Meaning(
        name="tpu-vm-pt-1.13",
        under_xrt="a TPU VM runtime version (also tpu-vm-v4-pt-1.13, and RUNTIME_VERSION= in scripts) whose "
        "image holds torch and torch_xla 1.13",
        on_target=(
            (
                "2.1-2.9",
                "still an image with torch_xla 1.13 on XRT: migrated code fails there; "
                "create the VM with a tpu-ubuntu2204-base image and pip install",
            ),
        ),
        action="install-xrt-era-release",
        checked="run: tests/meanings/test_settings_table.py::test_runtime_versions_name_an_xrt_era_release",
    ),
    Meaning(
        name="gcr.io/tpu-pytorch/xla:r1.13_*",
        under_xrt="the XRT-era images of torch_xla 1.x",
        on_target=(
            (
                "2.1-2.9",
                "still torch_xla 1.x; today's images are xla:r2.9.0_* at "
                "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker",
            ),
        ),
        action="install-xrt-era-release",
        checked="run: tests/rules/install/test_install_xrt_era_release.py",
    ),
    Meaning(
        name="torch==1.13",
        under_xrt="the torch that torch_xla 1.13 was built against: a requirements file pinned it alone, "
        "with torch_xla installed elsewhere (a TPU VM image, a wheel URL)",
        on_target=(
            (
                "2.1-2.9",
                "in a project that uses torch_xla, it brings back torch 1.13, which no torch_xla "
                "without XRT matches (each torch_xla 2.x wants the torch of its own release)",
            ),
        ),
        action="install-xrt-era-release",
        checked="run: tests/rules/install/test_install_xrt_era_release.py::"
        "test_a_lone_torch_1_pin_is_reported_in_a_project_that_uses_torch_xla",
    ),
    Meaning(
        name="--conda-env",
        under_xrt="xla_dist's option: the conda env to activate on each worker (torch-xla-1.13, torch-xla-nightly on "
        "the XRT-era VM images) before the command",
        on_target=(
            (
                "2.1-2.9",
                "conda activate of that env still brings back its torch_xla 1.x: "
                "the migrated program then runs on XRT's release",
            ),
        ),
        action="launch-xla-dist",
        checked="run: tests/rules/launch/test_launch_xla_dist.py",
    ),
)
