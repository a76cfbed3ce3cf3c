"""Run every benchmark in bench/ in one go (`make bench`); each prints its own ratios."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    worst = 0
    for script in sorted(HERE.glob("*.py")):
        if script.name == "run_all.py" or script.name.startswith("_"):
            continue
        print(f"\n=== {script.name}", flush=True)
        rc = subprocess.run([sys.executable, str(script)], check=False).returncode
        worst = max(worst, rc)
    return worst


if __name__ == "__main__":
    sys.exit(main())
