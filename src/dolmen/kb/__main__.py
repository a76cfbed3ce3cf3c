"""``python -m dolmen.kb``: regenerate kb/prebuilt.py after editing a data file."""

from pathlib import Path

from dolmen.kb.generate import prebuilt_source

target = Path(__file__).with_name("prebuilt.py")
target.write_text(prebuilt_source())
print(f"wrote {target}")
