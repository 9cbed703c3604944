"""SIMULATION: a reference model of XLA's collective semantics, checked against the shim.

No TPU here, and torch_xla 2.9 cannot run two replicas on CPU, so this is a model, not a
measurement. It models:

* XLA's semantics of each collective over replica groups: members take part in the order
  a group lists them; an empty group list means one group, which the runtime materialises
  in some order (XLA: replica-id order; torch_xla's ``create_optimized_replica_groups``
  shows the ring orders a runtime may prefer, e.g. v5p 2x2x2 and v6e 2x4);
* how a runtime numbers things: the device ids the PJRT client enumerates (in any order,
  not necessarily dense), the ordinal each thread's ``get_ordinal()`` returns, and the
  device assignment that makes a device replica r. For torch_xla >= 2.1 this follows
  pjrt_computation_client.cpp: ordinal = rank of the device id among sorted ids, and
  ``device_assignment(ordinal) = device_id``; for 1.13-2.0: ordinal = device id with an
  iota device assignment; for the 2022 nightlies of the seed: ordinal = process * threads
  + thread, a guess unrelated to the replica id.

The shim's part is its argument construction (``xrt2pjrt.shim.collective_args``): the
explicit replica groups it sends and the group position torch_xla's pinned all_gather
pads by. The properties: on every runtime the shim supports, for adversarial device
orders (the seeds' v4-8 [0, 2, 3, 1] and v3-8 [0, 1, 4, 5, 6, 7, 2, 3] included) and any
order the runtime picks for an implicit group, results come in ordinal order (or in the
user's group order). And the model is faithful: fed the seed's runtime and torch_xla's
implicit groups, it prints exactly the wrong table the seed reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xrt2pjrt.shim import collective_args as args

# --- the model: XLA --------------------------------------------------------------------


def xla_groups(sent: list[list[int]], implicit_order: list[int]) -> list[list[int]]:
    """The groups XLA runs: as sent, or the runtime's order for the one implicit group."""
    return sent if sent else [list(implicit_order)]


def group_of(replica: int, groups: list[list[int]]) -> list[int]:
    return next(g for g in groups if replica in g)


def xla_all_gather(inputs: dict[int, list], groups) -> dict[int, list]:
    return {r: [x for m in group_of(r, groups) for x in inputs[m]] for r in inputs}


def xla_all_reduce(inputs: dict[int, list], groups) -> dict[int, list]:
    return {r: [sum(col) for col in zip(*(inputs[m] for m in group_of(r, groups)))] for r in inputs}


def chunks(values: list, count: int) -> list[list]:
    size = len(values) // count
    return [values[i * size : (i + 1) * size] for i in range(count)]


def xla_reduce_scatter(inputs: dict[int, list], groups) -> dict[int, list]:
    reduced = xla_all_reduce(inputs, groups)
    out = {}
    for r in inputs:
        group = group_of(r, groups)
        out[r] = chunks(reduced[r], len(group))[group.index(r)]
    return out


def xla_all_to_all(inputs: dict[int, list], groups) -> dict[int, list]:
    out = {}
    for r in inputs:
        group = group_of(r, groups)
        out[r] = [x for m in group for x in chunks(inputs[m], len(group))[group.index(r)]]
    return out


def xla_collective_permute(inputs: dict[int, list], pairs) -> dict[int, list]:
    sources = {target: source for source, target in pairs}
    return {r: inputs[sources[r]] if r in sources else [0] * len(inputs[r]) for r in inputs}


# --- the model: runtimes ---------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    id: int
    process: int
    thread: int


def layout(device_ids: list[int], threads: int) -> list[Device]:
    """Devices as the client enumerates them; consecutive ones share a process."""
    return [Device(d, i // threads, i % threads) for i, d in enumerate(device_ids)]


def dense_runtime(devices: list[Device]) -> dict[int, int]:
    """torch_xla 2.1-2.9: {replica id: get_ordinal()} via its device assignment."""
    ordinal_of = {d.id: rank for rank, d in enumerate(sorted(devices, key=lambda d: d.id))}
    assignment = [None] * len(devices)
    for device in devices:
        assignment[ordinal_of[device.id]] = device.id  # device_assignment(ordinal) = id
    return {replica: ordinal_of[device_id] for replica, device_id in enumerate(assignment)}


def iota_runtime(devices: list[Device]) -> dict[int, int]:
    """torch_xla 1.13-2.0: ordinal = device id, replica r runs on device id r."""
    ids = {d.id for d in devices}
    assert ids == set(range(len(devices))), "the iota assignment needs dense device ids"
    return {replica: replica for replica in range(len(devices))}


def seed_runtime(devices: list[Device]) -> dict[int, int]:
    """2022 nightlies: replica = device id (iota), get_ordinal() = process * threads + thread."""
    threads = max(d.thread for d in devices) + 1
    return {d.id: d.process * threads + d.thread for d in devices}


# --- callers: what reaches XLA ---------------------------------------------------------


def run(op: str, ordinal_at: dict[int, int], groups_sent, implicit_order, make_input, pairs=None, pinned=False):
    """Run ``op`` on every replica; inputs and results keyed by each replica's ordinal."""
    inputs = {r: make_input(ordinal_at[r]) for r in ordinal_at}
    groups = xla_groups(groups_sent, implicit_order)
    if op == "all_gather" and pinned:
        # torch_xla's pinned all_gather: pad by the caller's position in its group (found
        # from its own get_ordinal() in the groups it sent), then all_reduce.
        padded = {}
        for r, value in inputs.items():
            ordinal = ordinal_at[r]
            if groups_sent:
                position, size = args.position_in_group(ordinal, groups_sent)
            else:
                position, size = ordinal, len(ordinal_at)
            padded[r] = [0] * (position * len(value)) + value + [0] * ((size - 1 - position) * len(value))
        out = xla_all_reduce(padded, groups)
    elif op == "collective_permute":
        out = xla_collective_permute(inputs, pairs)
    else:
        out = {
            "all_gather": xla_all_gather,
            "all_reduce": xla_all_reduce,
            "reduce_scatter": xla_reduce_scatter,
            "all_to_all": xla_all_to_all,
        }[op](inputs, groups)
    return {ordinal_at[r]: value for r, value in out.items()}


def shim_groups(user_groups, world):
    return args.replica_groups(user_groups, world)


# --- expectations in ordinal terms (what the seeds ask for) ----------------------------


def ordinal_group(ordinal: int, user_groups, world: int) -> list[int]:
    return group_of(ordinal, user_groups) if user_groups else list(range(world))


def expect_all_gather(world, user_groups, value_of):
    return {o: [x for m in ordinal_group(o, user_groups, world) for x in value_of(m)] for o in range(world)}


def expect_reduce_scatter(world, user_groups, value_of):
    out = {}
    for o in range(world):
        group = ordinal_group(o, user_groups, world)
        total = [sum(col) for col in zip(*(value_of(m) for m in group))]
        out[o] = chunks(total, len(group))[group.index(o)]
    return out


def expect_all_to_all(world, user_groups, value_of):
    out = {}
    for o in range(world):
        group = ordinal_group(o, user_groups, world)
        out[o] = [x for m in group for x in chunks(value_of(m), len(group))[group.index(o)]]
    return out


# --- the seeds ---------------------------------------------------------------------------
V3_8_SEED_REPLICA_ORDINALS = [0, 1, 4, 5, 6, 7, 2, 3]  # get_ordinal() of replicas 0..7
V4_8_SEED_DEVICE_IDS = [0, 2, 3, 1]
V3_8_SEED_DEVICE_IDS = [0, 1, 4, 5, 6, 7, 2, 3]
V5P_2X2X2_RING = [0, 1, 3, 2, 6, 7, 5, 4]
V6E_2X4_RING = [0, 2, 4, 6, 7, 5, 3, 1]


def seed_v3_8_devices() -> list[Device]:
    """The seed's v3-8: 4 processes x 2 threads, device ids whose guessed ordinals read
    [0, 1, 4, 5, 6, 7, 2, 3] in replica order (the seed's printed all_gather)."""
    by_id = {replica: divmod(ordinal, 2) for replica, ordinal in enumerate(V3_8_SEED_REPLICA_ORDINALS)}
    return [Device(i, *by_id[i]) for i in range(8)]


def test_model_reproduces_the_seed_table_on_the_seed_runtime():
    """SIMULATION faithfulness: torch_xla-era calls (implicit groups, guessed ordinals) on
    the seed's v3-8 give exactly the outputs ronghanghu reported."""
    ordinal_at = seed_runtime(seed_v3_8_devices())
    world = 8
    gathered = run("all_gather", ordinal_at, [], range(world), lambda o: [o])
    assert all(v == [0, 1, 4, 5, 6, 7, 2, 3] for v in gathered.values())
    scattered = run("reduce_scatter", ordinal_at, [], range(world), lambda o: [-x for x in range(world)])
    # every rank inputs -arange(8) with scale 1/8: the sum of 8 copies, scaled, is -arange(8)
    assert {rank: v[0] / world for rank, v in scattered.items()} == {
        0: 0,
        1: -1,
        2: -6,
        3: -7,
        4: -2,
        5: -3,
        6: -4,
        7: -5,
    }
    to_all = run("all_to_all", ordinal_at, [], range(world), lambda o: list(range(world)))
    assert to_all[2] == [6] * 8 and to_all[4] == [2] * 8  # rank i receives chunk -(replica of i)


@pytest.mark.parametrize("device_ids,threads", [(V4_8_SEED_DEVICE_IDS, 1), (V3_8_SEED_DEVICE_IDS, 2)])
@pytest.mark.parametrize("implicit", ["replica order", "v5p ring", "v6e ring", "reversed"])
def test_shim_orders_results_by_ordinal_on_the_seeds_device_orders(device_ids, threads, implicit):
    """SIMULATION: the seeds' device orders on torch_xla 2.9's runtime, with a runtime that
    may materialise the implicit group in a ring order: the shim's explicit groups win."""
    devices = layout(device_ids, threads)
    world = len(devices)
    order = {
        "replica order": list(range(world)),
        "v5p ring": V5P_2X2X2_RING,
        "v6e ring": V6E_2X4_RING,
        "reversed": list(reversed(range(world))),
    }[implicit]
    order = [r for r in order if r < world] if world < len(order) else order
    check_ordinal_order(dense_runtime(devices), world, None, order)


def test_implicit_groups_in_a_ring_order_break_ordinal_order_without_the_shim():
    """SIMULATION control: the same call with the implicit group torch_xla sends is wrong
    as soon as the runtime rings the implicit group (so the shim's explicit groups matter)."""
    ordinal_at = dense_runtime(layout(list(range(8)), 1))
    gathered = run("all_gather", ordinal_at, [], V5P_2X2X2_RING, lambda o: [o])
    assert gathered[0] == V5P_2X2X2_RING != list(range(8))
    shim = run("all_gather", ordinal_at, shim_groups(None, 8), V5P_2X2X2_RING, lambda o: [o])
    assert shim[0] == list(range(8))


def check_ordinal_order(ordinal_at, world, user_groups, implicit_order):
    sent = shim_groups(user_groups, world)
    size = args.uniform_group_size(sent)
    value_of = lambda o: [100 * o + i for i in range(size)]  # noqa: E731 -- distinct per ordinal
    for pinned in (False, True):
        got = run("all_gather", ordinal_at, sent, implicit_order, lambda o: [o], pinned=pinned)
        assert got == expect_all_gather(world, user_groups, lambda o: [o]), f"all_gather pinned={pinned}"
    got = run("reduce_scatter", ordinal_at, sent, implicit_order, value_of)
    assert got == expect_reduce_scatter(world, user_groups, value_of)
    got = run("all_to_all", ordinal_at, sent, implicit_order, value_of)
    assert got == expect_all_to_all(world, user_groups, value_of)
    pairs = args.source_target_pairs([(o, (o + 1) % world) for o in range(world)], world)
    got = run("collective_permute", ordinal_at, sent, implicit_order, lambda o: [o], pairs=pairs)
    assert got == {o: [(o - 1) % world] for o in range(world)}


@st.composite
def topologies(draw):
    """Adversarial PJRT device enumerations: any order, sparse ids, 1 or 2 threads."""
    threads = draw(st.sampled_from([1, 2]))
    processes = draw(st.integers(1, 8))
    world = threads * processes
    ids = draw(st.lists(st.integers(0, 4 * world), min_size=world, max_size=world, unique=True))
    implicit = draw(st.permutations(list(range(world))))
    group_size = draw(st.sampled_from([d for d in range(1, world + 1) if world % d == 0]))
    shuffled = draw(st.permutations(list(range(world))))
    user_groups = draw(st.sampled_from([None, [shuffled[i : i + group_size] for i in range(0, world, group_size)]]))
    return layout(ids, threads), implicit, user_groups


@settings(max_examples=300, deadline=None)
@given(topologies())
def test_shim_orders_results_by_ordinal_for_any_device_order(topology):
    """SIMULATION, property-based: torch_xla 2.1-2.9 runtime model, any device enumeration,
    any implicit-group order, with and without user groups (any listing order)."""
    devices, implicit, user_groups = topology
    check_ordinal_order(dense_runtime(devices), len(devices), user_groups, implicit)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 16).flatmap(lambda n: st.permutations(list(range(n)))), st.sampled_from([1, 2]))
def test_shim_orders_results_on_the_iota_runtime(device_ids, threads):
    """SIMULATION: torch_xla 1.13-2.0 (ordinal = device id, iota device assignment)."""
    if len(device_ids) % threads:
        device_ids = device_ids + [len(device_ids)]
    devices = layout(device_ids, threads)
    check_ordinal_order(iota_runtime(devices), len(devices), None, list(range(len(devices))))


def test_the_shim_needs_the_replica_id_as_ordinal():
    """SIMULATION, the boundary: on the seed's runtime, where get_ordinal() is a guess and
    not the replica id, no choice of groups over those guesses can order results. This is
    why the shim defines get_ordinal() as the replica id and supports torch_xla >= 1.13."""
    ordinal_at = seed_runtime(seed_v3_8_devices())
    got = run("all_gather", ordinal_at, shim_groups(None, 8), range(8), lambda o: [o])
    assert got[0] == V3_8_SEED_REPLICA_ORDINALS != list(range(8))


# --- the argument construction itself --------------------------------------------------


def test_groups_none_becomes_one_group_listing_every_ordinal():
    assert args.replica_groups(None, 4) == [[0, 1, 2, 3]]
    assert args.replica_groups([], 2) == [[0, 1]]
    assert args.replica_groups([(3, 1), [0, 2]], 4) == [[3, 1], [0, 2]]


@pytest.mark.parametrize(
    "groups,message",
    [([[0, 1], [1, 2]], "twice"), ([[0, 4]], "outside"), ([[0], []], "empty")],
)
def test_bad_groups_are_refused_with_the_reason(groups, message):
    with pytest.raises(args.CollectiveArgumentError, match=message):
        args.replica_groups(groups, 4)


def test_reduce_types_accept_xrt_spellings_only():
    assert [args.reduce_type(t) for t in ("sum", "SUM", "max", "and")] == ["sum", "sum", "max", "and"]
    with pytest.raises(args.CollectiveArgumentError, match="one of sum, mul"):
        args.reduce_type("avg")


def test_pairs_are_checked_like_xla():
    assert args.source_target_pairs([(0, 1), (1, 0)], 2) == [[0, 1], [1, 0]]
    with pytest.raises(args.CollectiveArgumentError, match="target appears twice"):
        args.source_target_pairs([(0, 1), (2, 1)], 3)
    with pytest.raises(args.CollectiveArgumentError, match="outside"):
        args.source_target_pairs([(0, 5)], 3)
