"""Reading a LUKS2 header for the posture checks: dolmen's parser of the device's first bytes
against `cryptsetup luksDump --dump-json-metadata` (what a shell posture script runs), on the
same images, interleaved in one run.

    .venv/bin/python bench/crypt_posture.py [--runs N]

Images made by cryptsetup in a temporary folder: a plain LUKS2 header, one with TPM2 and
dolmen tokens, one with a 256 KiB metadata area. Both readers must agree on the keyslots and
token types or the bench fails. Printed: the median per header read of each, their ratio
(dolmen / cryptsetup), and whether dolmen is at least 10x faster (a validate run reads every
NVMe partition of a node: 16 drives must not cost seconds). Exit 1 when missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))
TARGET = 10.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    from tests.crypt.images import FAST, cryptsetup, have_cryptsetup, make_image

    from dolmen.facts.crypt.luks2 import BINARY_SIZE, parse_header, read_size
    from dolmen.host import open_host
    from dolmen.host.blockdev import read_head

    if not have_cryptsetup():
        print("crypt_posture: skipped (cryptsetup is not installed)")
        return 0
    token = {"type": "dolmen", "keyslots": ["0"], "dolmen_format": "x"}
    with tempfile.TemporaryDirectory(prefix="dcp-", dir="/tmp") as tmp:
        root = Path(tmp)
        images = [
            make_image(root / "plain.img", "--type", "luks2", *FAST),
            make_image(root / "tokens.img", "--type", "luks2", *FAST),
            make_image(
                root / "meta.img", "--type", "luks2", *FAST, "--luks2-metadata-size", "256k"
            ),
        ]
        cryptsetup("token", "import", str(images[1]), stdin=json.dumps(token).encode())
        host = open_host()
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(args.runs):
            for image in images:
                t = time.perf_counter()
                rel = str(image).lstrip("/")
                size = read_size(read_head(host, rel, BINARY_SIZE))
                h = parse_header(read_head(host, rel, size)).header
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                out = subprocess.run(
                    ["cryptsetup", "luksDump", "--dump-json-metadata", str(image)],
                    capture_output=True,
                    check=True,
                ).stdout
                theirs.append(time.perf_counter() - t)
                meta = json.loads(out)
                assert h is not None
                assert [s.slot for s in h.keyslots] == sorted(int(k) for k in meta["keyslots"])
                assert [t.type for t in h.tokens] == [v["type"] for v in meta["tokens"].values()]
    a, b = statistics.median(ours), statistics.median(theirs)
    ratio = b / a
    print(
        f"header read, median of {len(ours)}: dolmen {a * 1e3:.2f} ms, "
        f"cryptsetup luksDump {b * 1e3:.2f} ms"
    )
    print(
        f"dolmen is {ratio:.1f}x faster (target at least {TARGET:g}x): "
        f"{'met' if ratio >= TARGET else 'MISSED'}"
    )
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
