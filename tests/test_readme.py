"""The README names every setting, with its default, and every ablation preset."""

from __future__ import annotations

import re
from pathlib import Path

from attnviz.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def table_rows() -> dict[str, str]:
    rows = re.findall(r"^\| `(ATTNVIZ_[A-Z_]+)` \| ([^|]+) \|", README, flags=re.M)
    return {name: default.strip() for name, default in rows}


def test_every_setting_is_in_the_readme_with_its_default():
    rows = table_rows()
    names = {f"ATTNVIZ_{field.upper()}" for field in Settings.model_fields}
    assert set(rows) == names
    defaults = Settings()
    for field in Settings.model_fields:
        value = getattr(defaults, field)
        shown = rows[f"ATTNVIZ_{field.upper()}"].strip("`")
        if value is None or value == "":
            assert shown.startswith("("), (field, shown)
        elif isinstance(value, bool):
            assert shown == str(value).lower(), (field, shown)
        elif isinstance(value, (int, float)):
            assert float(shown) == value, (field, shown)
        else:
            assert shown == str(value), (field, shown)


def test_every_ablation_preset_is_in_the_readme():
    from attnviz.training.ablations import PRESETS

    for name in PRESETS:
        assert f"| `{name}` |" in README, name
