"""``python -m dolmen.frozen``: regenerate frozen/compiled/ after changing a @frozen class."""

from pathlib import Path

from dolmen.frozen.generate import sources

folder = Path(__file__).with_name("compiled")
wanted = sources()
for stale in sorted(set(p.name for p in folder.glob("*.py")) - {"__init__.py", *wanted}):
    (folder / stale).unlink()
    print(f"removed {folder / stale}")
for name, text in wanted.items():
    (folder / name).write_text(text)
    print(f"wrote {folder / name}")
