"""api-not-in-target beyond its examples: parameters the target needs, and the backstop:
nothing the target release lacks is left unflagged in a migrated file."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize("call, reported", [
    ("torch_xla.amp.autocast()", True), ("torch_xla.amp.autocast(enabled=True)", True),
    ("torch_xla.amp.autocast(torch_xla.device())", False), ("torch_xla.amp.autocast(device=d)", False),
    ("torch_xla.amp.autocast(**options)", False)])
def test_a_parameter_the_target_needs_and_the_call_does_not_pass_is_reported(call, reported):
    # torch_xla.amp.autocast was torch.cuda.amp.autocast up to 2.0; 2.9's raises TypeError
    # without a device (checked on CPU)
    out = migrate(f"import torch_xla\nimport torch_xla.amp\n\nwith {call}:\n    pass\n")
    messages = [item.message for item in out.manual if item.rule == "api-not-in-target"]
    assert messages == ["torch_xla.amp.autocast needs device in torch_xla 2.9, which this call does not pass: a "
                        "TypeError there; pass the XLA device first: torch_xla.amp.autocast(torch_xla.device(), ...)"
                        ] * reported
