"""manual-mesh-reduce-objects beyond its examples: what may not be a tensor or a number, by
what the name was bound to before the call and after it."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize("data, reported", [
    # checked on CPU with torch_xla 2.9: a float reduces, a numpy.float64 raises UnpicklingError
    ("np.mean(losses)", True), ("metrics.accuracy_score(y, p)", True), ("obj", True), ("preds.numpy()", True),
    ("loss.item()", False), ("float(acc)", False), ("torch.tensor(acc)", False), ("loss.detach()", False),
    ("3", False), ("total.item() / flags.batches", False), ("np.mean(a) / n", True),
    # pytorch/xla 1.13's own examples (test_train_mp_imagenet.py, test_mp_mesh_reduce.py): a
    # name bound to a number or a tensor before the call, rebound to the result after it
    ("accuracy", False), ("svalue", False), ("tvalue", False), ("scores", True),
    ("(v := float(acc))", False), ("acc.item() +  # the epoch's\n        0.0", False)])
def test_a_mesh_reduce_of_what_may_not_be_a_tensor_or_number_is_reported(data, reported):
    source = ("import numpy as np\nimport torch\nimport torch_xla.core.xla_model as xm\n\n"
              "def test(correct, total_samples):\n    accuracy = 100.0 * correct.item() / total_samples\n"
              "    svalue = 1.25\n    tvalue = torch.tensor([[1, 2], [3, 4]])\n    scores = np.array([1.0])\n"
              f"    accuracy = xm.mesh_reduce('v', {data}, np.mean)\n")
    assert [item.rule for item in migrate(source).manual] == ["manual-mesh-reduce-objects"] * reported
    assert not migrate(source, target="shim").manual  # the shim's loads any value


def test_a_mesh_reduce_of_a_value_a_loop_rebinds_to_numpy_after_the_call_is_reported():
    out = migrate("import numpy as np\nimport torch_xla.core.xla_model as xm\n\nacc = 0.0\nfor epoch in range(3):\n"
                  "    print(xm.mesh_reduce('acc', acc, np.mean))\n    acc = metrics.accuracy_score(y, p)\n")
    assert [item.rule for item in out.manual] == ["manual-mesh-reduce-objects"]


@pytest.mark.parametrize("body, reported", [
    # values a local reading proves are tensors, numbers or dicts on every branch: none raises
    ("state = model.state_dict()\n    xm.mesh_reduce('s', state, lambda v: v[0])", False),
    ("xm.mesh_reduce('rng', torch.get_rng_state(), lambda v: v[0])", False),
    ("g = torch.Generator()\n    xm.mesh_reduce('g', g.get_state(), lambda v: v[0])", False),
    ("total = 0.0\n    for loss in losses:\n        total += loss.item()\n    xm.mesh_reduce('t', total, sum)", False),
    ("v = loss.item() if ok else 0.0\n    xm.mesh_reduce('v', v, sum)", False),
    ("xm.mesh_reduce('m', {'loss': loss.item(), 'n': len(batch)}, list)", False),
    ("xm.mesh_reduce('t', t.clone()[None], torch.cat)", False),  # t: read only as a tensor
    ("xm.mesh_reduce('t', annotated, torch.cat)", False),
    # what may still be numpy's or an object: reported
    ("rs = np.random.RandomState(0)\n    xm.mesh_reduce('rs', rs.get_state(), list)", True),
    ("xm.mesh_reduce('m', {'acc': np.mean(accs)}, list)", True),
    ("v = np.mean(accs) if ok else 0.0\n    xm.mesh_reduce('v', v, sum)", True),
    ("xm.mesh_reduce('u', u.clone(), torch.cat)", False),
    ("xm.mesh_reduce('u', u, torch.cat)", True),  # u is also handed to a function: may be anything
    ("xm.mesh_reduce('t', t, torch.cat)", True),  # t.ndim alone: numpy's arrays have it too
    ("total = 0.0\n    for a in accs:\n        total += np.mean(a)\n    xm.mesh_reduce('t', total, sum)", True),
])
def test_a_mesh_reduce_of_a_value_proven_a_tensor_number_or_dict_is_not_reported(body, reported):
    source = ("import numpy as np\nimport torch\nimport torch_xla.core.xla_model as xm\n\n"
              "def test(model, t, u, losses, loss, ok, accs, batch, annotated: torch.Tensor):\n"
              f"    print(t.ndim, u.clone())\n    log(u)\n    {body}\n")
    assert [item.rule for item in migrate(source).manual] == ["manual-mesh-reduce-objects"] * reported
