import math

import pytest

from nbbench import units


@pytest.mark.parametrize(
    "text,expected",
    [
        ("4k", 4096),
        ("4K", 4096),
        ("1M", 2**20),
        ("512M", 512 * 2**20),
        ("4G", 4 * 2**30),
        ("4GiB", 4 * 2**30),
        ("1.5G", int(1.5 * 2**30)),
        ("500MB", 500 * 10**6),
        ("1kB", 1000),
        ("123", 123),
        (4096, 4096),
        ("1T", 2**40),
    ],
)
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


@pytest.mark.parametrize(
    "key,unit",
    [
        ("read_bytes_per_s", "bytes/s"),
        ("iops", "iops"),
        ("lat_p99_ns", "ns"),
        ("samples_per_s", "samples/s"),
        ("au_pct", "%"),
        ("wall_s", "s"),
        ("memory_total_bytes", "bytes"),
        ("matmul_bf16_flop_per_s", "flop/s"),
        ("power_w", "W"),
        ("device_count", "count"),
    ],
)
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
    assert units.metric_label("lat_p99_ns") == "latency p99"
    assert units.metric_label("iops") == "iops"


@pytest.mark.parametrize(
    "key,label",
    [
        ("lat_p99_9_ns", "latency p99.9"),
        ("lat_p99_5_ns", "latency p99.5"),
        ("lat_p99_95_ns", "latency p99.95"),
        ("lat_p99_99_ns", "latency p99.99"),
        ("lat_p1_ns", "latency p1"),
        ("write_lat_p99_ns", "write latency p99"),
        ("file_size_p50_bytes", "file size p50"),
        ("data_wait_p99_s", "data wait p99"),
    ],
)
def test_percentiles_are_written_as_such(key, label):
    assert units.metric_label(key) == label


def test_labels_that_the_rule_alone_gets_wrong_are_named():
    # feed's rows, each distinct: cold and warm, samples/s and bytes/s
    names = [
        units.metric_label(k)
        for k in ("cold_samples_per_s", "cold_bytes_per_s", "warm_samples_per_s", "warm_bytes_per_s")
    ]
    assert len(set(names)) == 4 and all("cold" in n or "warm" in n for n in names)
    assert units.metric_label("samples_per_s") == "throughput"
    # CPU seconds: a time of its own, not 'proc cpu 0 ns'
    assert units.metric_label("proc_cpu_s") == "process CPU time"
    assert units.format_metric("proc_cpu_s", 0) == "0 s" and units.format_metric("proc_cpu_s", 2.5) == "2.50 s"
    assert units.metric_label("proc_cpu_mean_pct") == "process CPU mean"


def test_three_significant_figures_also_at_the_boundary():
    assert units.format_metric("warm_samples_per_s", 99.96) == "100 samples/s"  # not '100.0'
    assert units.format_metric("read_bytes_per_s", 999.7e6) == "1.00 GB/s"  # not '1000 MB/s'
    assert units.format_metric("data_wait_pct", 99.96) == "100 %"
    assert units.format_metric("au_pct", 5.4321) == "5.43 %"


def test_phrases_put_the_figure_first_and_paths_shorten_in_the_middle():
    assert units.metric_phrase("read_bytes_per_s", 2.01e9) == "2.01 GB/s read"
    assert units.metric_phrase("iops", 74_800) == "74.8 kIOPS"  # the unit names it
    assert units.metric_phrase("lat_p99_9_ns", 1.2e6) == "1.20 ms latency p99.9"
    short = units.shorten_middle("/tmp/nbbench-06-q15srco8/disk", 20)
    assert len(short) == 20 and short.startswith("/tmp/nbbench") and short.endswith("…/disk")
    assert units.shorten_middle("/data", 20) == "/data"


def test_format_many_puts_figures_that_stand_together_in_one_prefix():
    from nbbench.units import format_many

    assert format_many([494, 1610], "samples/s") == ["0.494 ksamples/s", "1.61 ksamples/s"]
    assert format_many([1.56e-3, 55.8e-3, 0.0155], "s") == ["1.56 ms", "55.8 ms", "15.5 ms"]
    assert format_many([1560e-6, 55800e-6], "s") == ["1.56 ms", "55.8 ms"]  # no trailing zeros
    assert format_many([2.02e6, 61.4e3], "B") == ["2.02 MB", "0.0614 MB"]
    assert format_many([537e6, 1.2e9], "B/s") == ["0.537 GB/s", "1.20 GB/s"]
    assert format_many([None, 3.0], "s") == ["N/A", "3.00 s"]
    assert format_many([0, 0], "B") == ["0 B", "0 B"]
    for vals, unit in (([1, 999.6], "B"), ([12e-9, 3e-6], "s")):
        out = format_many(vals, unit)
        assert len({o.split(" ")[-1] for o in out}) == 1, out  # one prefix
    # a figure that would read as 0 at the shared prefix keeps its own: never a zero for what is not
    assert format_many([4e3, 5.37e9], "B") == ["4.00 kB", "5.37 GB"]
    assert format_many([192, 11.8e6], "B") == ["192 B", "11.8 MB"]  # not "0.000192 MB"
    assert format_many([4.1e3, 11.8e6], "B") == ["0.0041 MB", "11.8 MB"]  # a thousandth or more: the shared prefix
    assert format_many([0, 5.37e9], "B") == ["0 GB", "5.37 GB"]
    assert format_many([20e-9, 12.0], "s")[0] == "20.0 ns"


def test_the_loaders_sentence_says_its_rates_in_one_prefix():
    from nbbench.results.pipeline.loader import LoaderResult

    r = LoaderResult(
        metrics={"samples_per_s": 494.0, "needed_samples_per_s": 1607.0}, labels={"accelerator": "h100-resnet50"}
    ).finish()
    s = r.sentence()
    assert "0.494 ksamples/s" in s and "1.61 ksamples/s" in s and "494 samples/s" not in s


def test_format_change_percent_below_two_and_factor_from_two():
    from nbbench.units import format_change

    assert format_change(1.523, 1.401, 1.632) == "+52.3 % (95 % CI +40.1 … +63.2 %)"
    assert format_change(0.9, 0.85, 0.95) == "-10.0 % (95 % CI -15.0 … -5.00 %)"
    assert format_change(15.7, 14.9, 16.4) == "15.7× faster (95 % CI 14.9–16.4×)"
    # a factor either way, the interval turned with it
    assert format_change(1 / 15.7, 1 / 16.4, 1 / 14.9) == "15.7× slower (95 % CI 14.9–16.4×)"
    # lower is better (a latency): a tenth of the time is 10× faster
    assert format_change(0.1, higher_is_better=False) == "10.0× faster"
    assert format_change(3.1, higher_is_better=None) == "3.10× higher"
    assert format_change(1.999) == "+99.9 %"
    assert format_change(2.0) == "2.00× faster"
    assert format_change(1.0) == "±0 %"
    assert format_change(1.2, 1.1, 1.3, level=0.9).endswith("(90 % CI +10.0 … +30.0 %)")
    assert format_change(None) == "N/A" and format_change(0.0) == "N/A"
