"""Rewriters for what is not Python: shell, Dockerfile, YAML, Markdown/rst, notebooks, configs.

One mechanism, several adapters:

- ``words``: the shell-word model (simple commands, words with their source spans, literal
  values and expansions) that every adapter uses for shell text;
- ``xla_dist``: the xla_dist command model (words -> ``Launch`` -> the worker command),
  shared with ``xrt2pjrt launch``;
- ``environment``: the XRT variable rules and the one way settings are renamed or removed;
- ``shell``: the shell rewriter, and the rules' home (``launch-xla-dist``);
- ``dockerfile``, ``yaml``, ``markdown``, ``notebook``: adapters that find the shell (or
  Python) inside their files and hand it to the rewriter of its kind;
- ``configs`` (``jsonnet``, ``terraform``): configs that are reported, never rewritten;
- ``installs``: the one check of install lines (wheels, pins, images) every adapter calls;
  ``requirements``: the rewriter of requirements files, which only reports;
- ``edits``: span edits and findings of one pass (``Recorder``), and the TODO lines that
  mark items to decide.
"""
