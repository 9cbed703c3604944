"""How the shim turns XRT-era collective arguments into the ones XLA receives.

Pure Python (no torch), so the reference model of XLA's collective semantics in
tests/shim/test_shim_collective_args.py can check it for many topologies.

The ordering guarantee rests on two facts. XLA orders every collective's result by the
order in which a replica group *lists* its members. And on torch_xla >= 1.13 the replica
id of a device is its global ordinal (torch_xla 2.9 builds the device assignment from the
ordinals: pjrt_computation_client.cpp, ``device_assignment(global_ordinal, 0) =
device_id``). So the shim never leaves a group implicit: ``groups=None`` becomes one group
listing every ordinal in order, and a user's groups pass through as written. Results then
follow ordinals (or the user's listing) whatever order the runtime enumerates devices in
or would choose for an implicit group -- with no extra op, sync or transfer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

REDUCE_TYPES = ("sum", "mul", "and", "or", "min", "max")


class CollectiveArgumentError(ValueError):
    pass


def reduce_type(value: str) -> str:
    """'sum', 'SUM' or xm.REDUCE_SUM -> 'sum'; anything else is an error naming the choices."""
    name = value.lower() if isinstance(value, str) else value
    if name not in REDUCE_TYPES:
        raise CollectiveArgumentError(f"reduce type {value!r} is not one of {', '.join(REDUCE_TYPES)}")
    return name


def replica_groups(groups: Iterable[Iterable[int]] | None, world_size: int) -> list[list[int]]:
    """The explicit, ordinal-listed replica groups the shim sends to XLA."""
    if not groups:
        return [list(range(world_size))]
    explicit = [[int(o) for o in group] for group in groups]
    seen: set[int] = set()
    for group in explicit:
        if not group:
            raise CollectiveArgumentError(f"empty replica group in {explicit}")
        for ordinal in group:
            if not 0 <= ordinal < world_size:
                raise CollectiveArgumentError(
                    f"ordinal {ordinal} in groups {explicit} is outside a world of {world_size}"
                )
            if ordinal in seen:
                raise CollectiveArgumentError(f"ordinal {ordinal} appears twice in groups {explicit}")
            seen.add(ordinal)
    return explicit


def uniform_group_size(groups: Sequence[Sequence[int]]) -> int:
    """all_gather, reduce_scatter and all_to_all split or stack by the group size."""
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise CollectiveArgumentError(f"replica groups {list(groups)} must all have the same size")
    return sizes.pop()


def position_in_group(ordinal: int, groups: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(index of ``ordinal`` in its group, size of the group)."""
    for group in groups:
        if ordinal in group:
            return list(group).index(ordinal), len(group)
    raise CollectiveArgumentError(f"ordinal {ordinal} is in none of the groups {list(groups)}")


def source_target_pairs(pairs: Iterable[Sequence[int]], world_size: int) -> list[list[int]]:
    """collective_permute's (source ordinal, target ordinal) pairs, checked as XLA would."""
    explicit = [[int(s), int(t)] for s, t in pairs]
    for index in (0, 1):
        used = [pair[index] for pair in explicit]
        role = ("source", "target")[index]
        for ordinal in used:
            if not 0 <= ordinal < world_size:
                raise CollectiveArgumentError(f"{role} {ordinal} is outside a world of {world_size}")
        if len(set(used)) != len(used):
            raise CollectiveArgumentError(f"a {role} appears twice in pairs {explicit}")
    return explicit
