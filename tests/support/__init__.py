"""Helpers the tests share: tiny checkpoints, model builders, oracles, real servers."""
