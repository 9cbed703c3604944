"""xrt2pjrt: move PyTorch/XLA programs off XRT and onto PJRT, and make them correct there.

Importing this package imports neither torch nor torch_xla.

Its modules stand on floors, top to bottom: a module imports from its own floor or the
ones below, never from one above, and no import inside a function hides a cycle
(tests/test_floors.py reads every module's imports). The one way up is discovery: the
registry imports the rules by walking their packages (registry._discover), so that no
engine file lists them. A module is on the first floor a pattern of which names it.

    cli        xrt2pjrt.__main__ xrt2pjrt.cli xrt2pjrt.commands xrt2pjrt.usage
    commands   xrt2pjrt.migration xrt2pjrt.guide xrt2pjrt.inventory xrt2pjrt.runtime xrt2pjrt.runtime.*
    engine     xrt2pjrt.cache xrt2pjrt.carry xrt2pjrt.code_trees xrt2pjrt.codemod xrt2pjrt.config xrt2pjrt.settling
    mixed      xrt2pjrt.mixed xrt2pjrt.mixed.*
    rewriters  xrt2pjrt.python.rewriter xrt2pjrt.text.shell xrt2pjrt.text.dockerfile xrt2pjrt.text.yaml
               xrt2pjrt.text.jsonnet xrt2pjrt.text.terraform xrt2pjrt.text.configs
               xrt2pjrt.text.requirements xrt2pjrt.text.metadata xrt2pjrt.text.dotenv
    rules      xrt2pjrt.rules.*
    analyses   xrt2pjrt.python.* xrt2pjrt.text.*
    shim       xrt2pjrt.shim.*
    base       xrt2pjrt.registry xrt2pjrt.rule_index xrt2pjrt.rewriters xrt2pjrt.recorder xrt2pjrt.report
               xrt2pjrt.suppress xrt2pjrt.files xrt2pjrt.diff xrt2pjrt.xrt_variables xrt2pjrt.shim_packages
               xrt2pjrt.width xrt2pjrt.meanings xrt2pjrt.meanings.* xrt2pjrt.file_caches xrt2pjrt
"""

__version__ = "0.1.0"
