"""A converted tensor's file pages are given back (pretrained/pages.py), and nothing else is."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from attnviz.pretrained.pages import PAGE, FilePages


def resident_kb(address: int) -> int:
    """The resident kilobytes of the mapping that holds ``address`` (/proc/self/smaps)."""
    found = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(x, 16) for x in head.split("-"))
            found = start <= address < end
        elif found and line.startswith("Rss:"):
            return int(line.split()[1])
    raise AssertionError("no mapping holds the address")


def test_a_memory_mapped_tensors_pages_go_and_its_values_stay(tmp_path):
    big = torch.arange(4 * 2**20, dtype=torch.float32).reshape(1024, 4096)  # 16 MB
    save_file({"big": big.to(torch.bfloat16)}, str(tmp_path / "m.safetensors"))
    with safe_open(tmp_path / "m.safetensors", framework="pt") as f:
        t = f.get_tensor("big")
    pages = FilePages()
    converted = t.float()  # reads every page of the mapping
    before = resident_kb(t.data_ptr())
    assert before * 1024 >= t.nbytes - 2 * PAGE
    pages.release(t)
    assert pages.released >= t.nbytes - 2 * PAGE
    assert resident_kb(t.data_ptr()) * 1024 <= 2 * PAGE, "the pages stayed resident"
    assert torch.equal(t.float(), converted), "read again from the file, the same values"


def test_memory_that_is_not_a_files_is_left_alone():
    t = torch.randn(1024, 1024)  # anonymous memory: MADV_DONTNEED would zero it
    copy = t.clone()
    pages = FilePages()
    pages.release(t)
    assert pages.released == 0
    assert torch.equal(t, copy)
