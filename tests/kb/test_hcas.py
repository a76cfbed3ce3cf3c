"""kb.hcas: RDMA adapter families by part number, and broken rows refused with the row."""

from __future__ import annotations

import pytest

from dolmen.kb import KbDataError, load_kb
from dolmen.kb.hcas import load_hcas

ROW = 'id = "MT4129"\nname = "ConnectX-7"\nsource = "x"\n'


def test_lookup_by_every_spelling() -> None:
    hcas = load_kb().hcas
    cx7 = hcas.get("MT4129")
    assert cx7 is not None and cx7.name == "ConnectX-7" and cx7.max_gbps == 400
    assert hcas.get("4129") == cx7 == hcas.get(" mt4129 ")
    assert hcas.get("hca_type") is None and hcas.get(None) is None and hcas.get("") is None
    assert load_hcas() == hcas


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"[[hca]]\n{ROW}", "no 'max_gbps'"),
        (f"[[hca]]\n{ROW}max_gbps = 0\n", "above 0"),
        (f"[[hca]]\n{ROW}max_gbps = 4000\n", "at most 3200"),
        (f'[[hca]]\n{ROW}max_gbps = "400"\n', "wrong type"),
        (f"[[hca]]\n{ROW}max_gbps = 400\n[[hca]]\n{ROW}max_gbps = 400\n", "duplicate id"),
        ('[[hca]]\nid = "CX7"\nname = "x"\nsource = "x"\nmax_gbps = 400\n', "part number"),
    ],
)
def test_broken_rows_are_refused(text: str, message: str) -> None:
    with pytest.raises(KbDataError) as e:
        load_hcas(text)
    assert message in str(e.value) and "hcas.toml" in str(e.value)
