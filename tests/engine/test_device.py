import pytest
import torch

from attnviz.engine.device import resolve_device


def test_auto_picks_cuda_only_when_torch_sees_it():
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")


def test_cuda_without_a_gpu_is_an_error_not_a_fallback(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="no CUDA"):
        resolve_device("cuda")


@pytest.mark.parametrize("name", ["tpu", "gpu0", "meta"])
def test_unknown_devices_are_refused(name):
    with pytest.raises(ValueError, match="device"):
        resolve_device(name)
