"""Content encoding (``attnviz.wire.encoding``): the coding negotiated from Accept-Encoding as
RFC 9110 weighs it, and the compressors' bytes read back by the standard decoders."""

from __future__ import annotations

import gzip
import os

import pytest
import zstandard

from attnviz.wire.encoding import accepts, compress, compressor, negotiate


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("gzip, deflate, br, zstd", "zstd"),  # a browser's: zstd preferred
        ("gzip, deflate", "gzip"),
        ("identity", None),
        ("", None),
        ("br", None),
        ("zstd;q=0, gzip", "gzip"),  # weighed 0: refused
        ("gzip;q=0", None),
        ("GZip ; Q=0.8", "gzip"),  # names and parameters in any case, spaces around
        ("gzip;q=0.5, zstd;q=0.4", "gzip"),  # the heavier
        ("gzip;q=0.5, zstd;q=0.5", "zstd"),  # a tie: the one preferred
        ("*", "zstd"),  # anything
        ("*;q=0.5, gzip", "gzip"),  # named outweighs the rest
        ("*, zstd;q=0", "gzip"),
        ("gzip;q=x", None),  # an unreadable weight is not taken
        ("gzip;q=2", "gzip"),  # past 1: 1
        (",, gzip ,", "gzip"),
    ],
)
def test_the_coding_sent_is_the_one_the_client_weighs_most(header, chosen):
    assert negotiate(header) == chosen
    assert accepts(header) == (chosen is not None)


def test_only_a_coding_offered_is_chosen():
    assert negotiate("zstd, gzip;q=0.1", ("gzip",)) == "gzip"
    assert negotiate("zstd", ("gzip",)) is None


@pytest.mark.parametrize("rle", [False, True])
def test_compressed_bodies_read_back_whole_and_in_pieces(rle):
    data = os.urandom(3000) + bytes(20000) + b"attention " * 500
    assert gzip.decompress(compress(data, "gzip", rle=rle)) == data
    assert gzip.decompress(compress(data, "gzip", level=9)) == data
    assert zstandard.ZstdDecompressor().decompressobj().decompress(compress(data, "zstd")) == data
    for coding in ("gzip", "zstd"):
        add, end = compressor(coding, rle=rle)
        sent = b"".join([add(data[i : i + 4096]) for i in range(0, len(data), 4096)] + [end()])
        if coding == "gzip":
            assert gzip.decompress(sent) == data
        else:
            assert zstandard.ZstdDecompressor().decompressobj().decompress(sent) == data
    with pytest.raises(ValueError, match="br"):
        compressor("br")
