"""APIs that survive XRT with another meaning: calls whose name is the same on torch_xla 2.x
but whose result or effect changed (see the package docstring).

``checked`` holds one or more checks joined by ``; ``: ``run: TEST`` (a test that shows it on
the installed torch_xla's CPU PJRT), ``source: torch_xla@TAG PATH:LINE `TEXT```
(pytorch/xla's file at that tag holds TEXT on that line; tests/python/test_meanings_apis.py
reads the v2.9.0 ones in the installed torch_xla, which is that release).
"""

from __future__ import annotations

from xrt2pjrt.meanings.entry import Meaning

_PROBE_TEST = (
    "run: tests/rules/manual/test_manual_device_probe.py::"
    "test_the_probe_says_tpu_on_a_cpu_host_and_the_advised_test_does_not"
)
_FALLBACK = (
    "torch_xla@v1.13.0 third_party/xla_client/computation_client.cc:280 `Missing XLA configuration`; "
    "source: torch_xla@v2.9.0 torch_xla/runtime.py:70 `Defaulting to PJRT_DEVICE=CPU`"
)
_XRT_PROCESSES = (
    "source: torch_xla@v1.13.0 torch_xla/distributed/xla_multiprocessing.py:393 "
    "`return torch.multiprocessing.start_processes(`"
)
_THREADS = "source: torch_xla@v2.9.0 torch_xla/_internal/tpu.py:121 `return 2 if version() <= 3 else 1`"

MEANINGS: tuple[Meaning, ...] = (
    Meaning(
        name="xm.xla_device() as a probe",
        under_xrt=(
            "raised RuntimeError ('Missing XLA configuration') on a host with no XRT configuration, so "
            "`try: xm.xla_device() except RuntimeError: ...` answered 'no TPU' on GPU and CPU hosts"
        ),
        on_target=(
            (
                "2.1-2.9",
                "torch_xla picks PJRT_DEVICE=CPU where it finds no TPU and the call returns "
                "xla:0: the probe is True on every host; torch_xla.runtime.device_type() == 'TPU' "
                "is the test",
            ),
        ),
        action="manual-device-probe",
        checked=f"{_PROBE_TEST}; source: {_FALLBACK}",
    ),
    Meaning(
        name="xm.get_xla_supported_devices(devkind) as a probe",
        under_xrt=(
            "raised as xm.xla_device() did without an XRT configuration; with a devkind, None where the "
            "host had no device of that kind"
        ),
        on_target=(
            (
                "2.1-2.7",
                "lists the devices of this process on every host (CPU where no TPU): never empty, "
                "and a devkind other than the runtime's still lists them",
            ),
            (
                "2.8-2.9",
                "takes no devkind (a TypeError) and lists this process's devices, never empty; "
                "torch_xla.runtime.device_type() == devkind is the test",
            ),
        ),
        action="api-supported-devices",
        checked=(
            "run: tests/rules/api/test_api_supported_devices.py; "
            "source: torch_xla@v1.13.0 torch_xla/core/xla_model.py:139 `xla_devices = _DEVICES.value`; "
            "source: torch_xla@v2.9.0 torch_xla/core/xla_model.py:69 "
            "`def get_xla_supported_devices(max_devices: Optional[int] = None) -> List[str]:`; "
            f"source: {_FALLBACK}"
        ),
    ),
    Meaning(
        name="xm.get_xla_supported_devices() in a try, as a probe",
        under_xrt="the same failure as xm.xla_device() without an XRT configuration, caught the same way",
        on_target=(
            (
                "2.1-2.9",
                "never raises: the probe is True on every host; torch_xla.runtime.device_type() == 'TPU' is the test",
            ),
        ),
        action="manual-device-probe",
        checked=f"{_PROBE_TEST}; source: {_FALLBACK}",
    ),
    Meaning(
        name="xm.xla_device(n)",
        under_xrt=(
            "'xla:n': entry n of this process's device list, a sorted set of the devices XRT gave the "
            "process (CPU:0 before TPU:0 ...); an xmp.spawn replica held its own core only"
        ),
        on_target=(
            (
                "2.1-2.9",
                "entry n of the devices this process sees: a replica of xmp.spawn sees its own "
                "(one on TPU v4+, so n >= 1 raises IndexError; two threads' on v2/v3), a process "
                "outside a spawn every chip of the host; torch_xla.device() is this replica's",
            ),
        ),
        action="api-xla-device",
        checked=(
            "run: tests/rules/api/test_api_xla_device.py::test_an_index_past_the_last_device_raises; "
            "source: torch_xla@v1.13.0 torch_xla/core/xla_model.py:252 `device = 'xla:{}'.format(n)`; "
            "source: torch_xla@v1.13.0 third_party/xla_client/xrt_computation_client.h:231 "
            "`std::set<std::string> devices;`; "
            "source: torch_xla@v1.13.0 third_party/xla_client/computation_client.cc:77 "
            "`std::string mp_device = XrtComputationClient::GetMultiProcessingDevice();`; "
            "source: torch_xla@v2.9.0 torch_xla/core/xla_model.py:137 `return torch_xla.device(n)`; "
            "source: torch_xla@v2.9.0 torch_xla/torch_xla.py:47 `device = devices[index]`"
        ),
    ),
    Meaning(
        name="xmp.MpModelWrapper",
        under_xrt="one model built at module level, a copy-on-write copy in each forked replica process",
        on_target=(
            (
                "2.1-2.9",
                "on TPU v2/v3 a process runs two replicas as threads and .to() hands both the one "
                "module, on the device that moved it last; build the model in each replica and "
                "call torch_xla.core.xla_model.broadcast_master_param; on v4+ as under XRT",
            ),
        ),
        action="manual-mp-model-wrapper",
        checked=(
            "run: tests/rules/manual/test_manual_mp_model_wrapper.py::"
            "test_two_thread_replicas_get_one_module_on_one_device; "
            f"{_XRT_PROCESSES}; {_THREADS}; "
            "source: torch_xla@v2.9.0 torch_xla/distributed/xla_multiprocessing.py:90 `self._model.to(device)`"
        ),
    ),
    Meaning(
        name="torch.manual_seed in a spawned function",
        under_xrt="one process per replica: replicas seeded alike built identical models",
        on_target=(
            (
                "2.1-2.9",
                "on TPU v2/v3 two replicas share a process and torch's global RNG, so models "
                "built after one seed differ; torch_xla.core.xla_model.broadcast_master_param "
                "after building makes them equal; on v4+ as under XRT",
            ),
        ),
        action="manual-seeded-replicas",
        checked=(
            "run: tests/rules/manual/test_manual_seeded_replicas.py::"
            "test_two_thread_replicas_seeded_alike_draw_different_numbers; "
            f"{_XRT_PROCESSES}; {_THREADS}; source: torch_xla@v2.9.0 torch_xla/_internal/pjrt.py:72 "
            "`with concurrent.futures.ThreadPoolExecutor(`"
        ),
    ),
    Meaning(
        name="torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)",
        under_xrt="True set XLA's HIGHEST float32 matmul precision, False its DEFAULT",
        on_target=(
            ("2.1-2.4", "the same binding, the same meaning"),
            ("2.5-2.7", "gone (AttributeError); torch_xla._XLAC._xla_set_mat_mul_precision('highest') sets it by name"),
            ("2.8-2.9", "gone; torch_xla.backends.set_mat_mul_precision('highest') sets it"),
        ),
        action="api-full-mat-mul-precision",
        checked=(
            "run: tests/rules/api/test_api_full_mat_mul_precision.py::"
            "test_the_rewrite_sets_the_precision_the_bool_chose; "
            "source: torch_xla@v1.13.0 torch_xla/csrc/init_python_bindings.cpp:1205 "
            "`use_full_mat_mul_precision ? xla::PrecisionConfig::HIGHEST`; "
            "source: torch_xla@v2.9.0 torch_xla/backends/__init__.py:80 "
            "`torch_xla._XLAC._xla_set_mat_mul_precision(precision)`"
        ),
    ),
)
