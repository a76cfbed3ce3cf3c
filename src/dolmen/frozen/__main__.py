"""``python -m dolmen.frozen``: regenerate frozen/methods.py after changing a @frozen class."""

from pathlib import Path

from dolmen.frozen.generate import methods_source

target = Path(__file__).with_name("methods.py")
target.write_text(methods_source())
print(f"wrote {target}")
