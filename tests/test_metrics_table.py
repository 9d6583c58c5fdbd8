"""The folded "all N metrics" table writes the figures that share a unit in one SI prefix
(the issue's "one prefix within a table"), in the text card and the HTML one alike."""

import re

from nbbench.results.present.view import table_figures
from nbbench.results.system.monitor import MonitorResult


def test_figures_of_one_unit_share_one_prefix_and_others_keep_their_own():
    items = [
        ("read_bytes_per_s", 537e6),
        ("write_bytes_per_s", 1.2e9),
        ("lat_mean_ns", 55800.0),
        ("lat_min_ns", 1560.0),
        ("busy_pct", 3.0),
        ("gpu0_mem_bytes", 2**30),
        ("ops_count", 5),
        ("x_bytes", None),
    ]
    assert table_figures(items) == ["0.537 GB/s", "1.20 GB/s", "55.8 µs", "1.56 µs", "3.00 %", "1.00 GiB", "5", "N/A"]


def _result():
    return MonitorResult(
        params={"what": "cell"},
        metrics={
            "wall_s": 10.0,
            "proc_cpu_s": 9.8,
            "disk_read_mean_bytes_per_s": 537e6,
            "disk_write_mean_bytes_per_s": 1.2e9,
            "proc_read_bytes": 2.0e6,
            "proc_write_bytes": 40e6,
        },
    ).finish()


def _prefixes(texts, unit):
    return {m.group(1) for t in texts for m in [re.search(r"\d\s*(\S*?)" + re.escape(unit) + r"\b", t)] if m}


def test_the_folded_metrics_table_has_one_prefix_per_unit_in_text_and_html():
    r = _result()
    text = str(r.details())
    table = text[text.index("all 6 metrics") :]
    assert "0.537 GB/s" in table and "1.20 GB/s" in table and "537 MB/s" not in table
    assert "2.00 MB" in table and "40.0 MB" in table
    html = r._repr_html_()
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html[html.index("all 6 metrics") :])
    assert _prefixes([c for c in cells if c.endswith("B/s")], "B/s") == {"G"}
    assert _prefixes([c for c in cells if c.endswith(" MB") or c.endswith(" GB")], "B") == {"M"}
