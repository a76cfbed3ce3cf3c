"""IMA measurement lists written as the kernel prints ascii_runtime_measurements."""

from __future__ import annotations

import hashlib
import struct


def template_data(alg: str, file_digest: bytes, path: str, sig: bytes | None) -> bytes:
    fields = [alg.encode() + b":\x00" + file_digest, path.encode() + b"\x00"]
    if sig is not None:
        fields.append(sig)
    return b"".join(struct.pack("<I", len(f)) + f for f in fields)


def line(
    path: str, content: bytes, template: str = "ima-ng", sig: bytes = b""
) -> tuple[str, bytes]:
    """One list line and its template data (what each bank hashes)."""
    digest = hashlib.sha256(content).digest()
    data = template_data("sha256", digest, path, sig if template == "ima-sig" else None)
    text = f"10 {hashlib.sha1(data).hexdigest()} {template} sha256:{digest.hex()} {path}"
    if template == "ima-sig" and sig:
        text += f" {sig.hex()}"
    return text, data


def violation(path: str) -> tuple[str, None]:
    return f"10 {'0' * 40} ima-ng sha256:{'0' * 64} {path}", None


def boot_list() -> list[tuple[str, bytes | None]]:
    return [
        line("boot_aggregate", b"aggregate"),
        line("/usr/bin/bash", b"bash"),
        line(
            "/usr/lib/x86_64-linux-gnu/libcuda.so.550.127.05",
            b"libcuda",
            "ima-sig",
            b"\x03\x02\x04sig",
        ),
        line("/opt/my models/run me.py", b"script", "ima-sig"),
        violation("/var/log/syslog"),
        line("/usr/bin/nvidia-smi", b"smi"),
    ]


def expected_pcr10(entries: list[tuple[str, bytes | None]], bank: str) -> bytes:
    size = hashlib.new(bank).digest_size
    value = bytes(size)
    for _, data in entries:
        measured = b"\xff" * size if data is None else hashlib.new(bank, data).digest()
        value = hashlib.new(bank, value + measured).digest()
    return value
