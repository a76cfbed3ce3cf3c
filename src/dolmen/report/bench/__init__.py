"""``dolmen bench`` reports: the ``dolmen.bench/1`` document (document.py), its figures
(figures.py), the terminal view (terminal.py), two runs compared (compare.py), named
baselines (store.py) and the PNG/SVG charts (plots.py, charts.py; matplotlib optional).

Everything here reads the JSON shapes the workloads' ``to_json()`` write (docs/bench.md),
never the workloads themselves: a bench.json made on a GPU node is plotted and compared
anywhere.
"""
