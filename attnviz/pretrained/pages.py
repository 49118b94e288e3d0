"""Giving back a checkpoint's file pages once a tensor is converted (Linux only).

A checkpoint is memory-mapped (``folder._open``): each tensor is a view of a private mapping of
the file, whose pages become resident as a conversion reads them and stay so until the mapping
goes. Converting a bfloat16 checkpoint to float32 would hold both at the peak: Llama 3.2 1B's
shape, 2.5 GB of file pages beside 4.9 GB of float32 weights, peaked at 7.7 GB. Once a tensor is
converted its pages are not read again, so ``FilePages.release`` drops them (``madvise``
``MADV_DONTNEED``: a private file mapping never written is read again from the file if it is
touched, so nothing is lost). Only whole pages inside a file-backed mapping are dropped; any
other memory (an anonymous buffer, which the call would zero) is left alone.
"""

from __future__ import annotations

import bisect
import ctypes
import logging
import mmap
from pathlib import Path

import torch

log = logging.getLogger(__name__)

MADV_DONTNEED = 4
PAGE = mmap.PAGESIZE


class FilePages:
    """The process's file-backed mappings when created, and ``release`` for a tensor in one."""

    def __init__(self) -> None:
        self._spans: list[tuple[int, int]] = []
        self._madvise = None
        self.released = 0  # bytes given back
        try:
            lines = Path("/proc/self/maps").read_text().splitlines()
            self._madvise = ctypes.CDLL(None, use_errno=True).madvise
        except (OSError, AttributeError):
            return  # not Linux: nothing is released
        self._madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        for line in lines:
            parts = line.split(maxsplit=5)
            # address perms offset dev inode path: a path that is a file (not [heap], [stack])
            if len(parts) == 6 and parts[5].startswith("/") and parts[4] != "0":
                start, end = (int(x, 16) for x in parts[0].split("-"))
                self._spans.append((start, end))
        self._spans.sort()
        self._starts = [s for s, _ in self._spans]

    def release(self, t: torch.Tensor) -> None:
        """Drop the whole pages of ``t``'s storage, if they lie in one file-backed mapping."""
        if self._madvise is None or t.device.type != "cpu":
            return
        storage = t.untyped_storage()
        begin = storage.data_ptr()
        end = begin + storage.nbytes()
        i = bisect.bisect_right(self._starts, begin) - 1
        if i < 0 or end > self._spans[i][1]:
            return
        first = -(-begin // PAGE) * PAGE  # whole pages only: a neighbour keeps its edges
        last = end // PAGE * PAGE
        if last > first and self._madvise(first, last - first, MADV_DONTNEED) == 0:
            self.released += last - first
