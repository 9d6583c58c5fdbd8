import math

import pytest

from nbbench import units


@pytest.mark.parametrize("text,expected", [
    ("4k", 4096), ("4K", 4096), ("1M", 2**20), ("512M", 512 * 2**20), ("4G", 4 * 2**30),
    ("4GiB", 4 * 2**30), ("1.5G", int(1.5 * 2**30)), ("500MB", 500 * 10**6), ("1kB", 1000),
    ("123", 123), (4096, 4096), ("1T", 2**40),
])
def test_parse_size_follows_dd(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "4X", "-1", "1..5M", "M"])
def test_parse_size_rejects_with_a_sentence(bad):
    with pytest.raises(ValueError) as exc:
        units.parse_size(bad)
    assert "size" in str(exc.value)


def test_parse_duration():
    assert units.parse_duration("10") == 10.0
    assert units.parse_duration("500ms") == 0.5
    assert units.parse_duration("2m") == 120.0
    with pytest.raises(ValueError):
        units.parse_duration("soon")


@pytest.mark.parametrize("key,unit", [
    ("read_bytes_per_s", "bytes/s"), ("iops", "iops"), ("lat_p99_ns", "ns"), ("samples_per_s", "samples/s"),
    ("au_pct", "%"), ("wall_s", "s"), ("memory_total_bytes", "bytes"), ("matmul_bf16_flop_per_s", "flop/s"),
    ("power_w", "W"), ("device_count", "count"),
])
def test_unit_of_key(key, unit):
    assert units.unit_of(key) == unit


def test_format_metric_uses_decimal_mb_and_binary_mib():
    assert units.format_metric("read_bytes_per_s", 943e6) == "943 MB/s"
    assert units.format_metric("write_bytes_per_s", 1.5e9) == "1.50 GB/s"
    assert units.format_metric("iops", 45_300) == "45.3 kIOPS"
    assert units.format_metric("lat_p99_ns", 12_345) == "12.3 µs"
    assert units.format_metric("lat_mean_ns", 850) == "850 ns"
    assert units.format_metric("memory_total_bytes", 2**30) == "1.00 GiB"
    assert units.format_bytes(10**6) == "1.00 MB"
    assert units.format_metric("au_pct", 91.234) == "91.2 %"
    assert units.format_metric("x_ns", math.nan) == "N/A"
    assert units.format_metric("x_ns", None) == "N/A"


def test_metric_label():
    assert units.metric_label("read_bytes_per_s") == "read"
    assert units.metric_label("lat_p99_ns") == "lat p99"
    assert units.metric_label("iops") == "iops"
