"""the early torch_xla.experimental.pjrt module.

Every import form resolves to the same dotted names, so ``pjrt.world_size()``,
``from torch_xla.experimental.pjrt import world_size`` and the rest are all rewritten; the
old import goes once nothing uses it (import-gone-module).
"""
