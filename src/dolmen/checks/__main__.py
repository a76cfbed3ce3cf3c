"""``python -m dolmen.checks``: regenerate checks/index.py after adding or moving a check."""

from pathlib import Path

from dolmen.checks import index_source

target = Path(__file__).with_name("index.py")
target.write_text(index_source())
print(f"wrote {target}")
