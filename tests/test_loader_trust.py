"""What loader and sweep accept: sweep given a DataLoader sweeps its dataset (its
collate_fn kept, what is not carried over named in the note); loader refuses an object
whose first item holds no tensor, array or bytes (a str) instead of an ok-looking
empty result."""

import pytest

from nbbench.results import ProbeError


class Records:
    """Map-style: each item a dict with a variable-length list (needs its own collate)."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        import torch

        return {"x": torch.full((3,), float(i)), "tokens": list(range(i % 5))}


COLLATED = []


def collate(items):
    import torch

    COLLATED.append(len(items))
    return torch.stack([it["x"] for it in items]), [it["tokens"] for it in items]


def test_sweep_given_a_dataloader_sweeps_its_dataset_with_its_collate_fn():
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler

    from nbbench.probes.pipeline.sweep import sweep

    ds = Records()
    dl = DataLoader(
        ds,
        batch_size=16,
        num_workers=0,
        collate_fn=collate,
        sampler=DistributedSampler(ds, num_replicas=2, rank=0, shuffle=False),
        drop_last=True,
    )
    COLLATED.clear()
    res = sweep(dl, num_workers=[0], batch_size=[4], duration=0.2, warmup=1)
    assert res.ok, res.reason
    assert res.configs[0]["status"] == "ok" and res.configs[0]["samples_per_s"] > 0
    assert COLLATED and set(COLLATED) == {4}  # the loader's collate_fn, at the sweep's batch size
    assert res.labels["dataset"] == "Records" and res.labels["from_loader"] == "DataLoader"
    assert res.params["loader_settings"]["batch_size"] == 16
    note = res.note
    assert note.startswith("Swept the DataLoader's dataset (Records), keeping its collate_fn, drop_last")
    assert "the loader's own settings (num_workers=0, batch_size=16, pin_memory=False" in note
    assert "replaced by the sweep's" in note
    assert "its sampler (DistributedSampler) is not carried over" in note
    assert f"note: {note}" in res.text_table() and "DistributedSampler" in res._repr_html_()


def test_loader_parts_keeps_only_what_is_not_torchs_default():
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    from nbbench.probes.pipeline.dataloader import loader_parts

    plain = loader_parts(DataLoader(list(range(10)), batch_size=2, shuffle=True))
    assert plain["kwargs"] == {} and plain["dropped"] == []

    class Buckets(BatchSampler):
        pass

    odd = loader_parts(
        DataLoader(list(range(10)), batch_sampler=Buckets(SequentialSampler(range(10)), 3, False), worker_init_fn=print)
    )
    assert odd["kept"] == ["worker_init_fn"]
    assert any("batch_sampler (Buckets) is not carried over" in d for d in odd["dropped"])


def test_sweep_magic_given_a_dataloader_variable(ipshell):
    from torch.utils.data import DataLoader

    ipshell.user_ns["train_loader"] = DataLoader(Records(), batch_size=8, collate_fn=collate)
    s = ipshell.run_line_magic(
        "iobench", "sweep train_loader --workers 0 --batch-size 4 --duration 0.2 --warmup 1 -o -q --no-save"
    )
    assert s.ok and s.configs[0]["status"] == "ok"
    assert "the loader's own settings" in s.note


def test_loader_refuses_what_yields_no_arrays():
    from nbbench.probes.pipeline.loader import bench_loader

    with pytest.raises(
        ProbeError,
        match=r"^the first item of the str given is a str \('a'\), not a batch of "
        r"tensors or arrays: give a DataLoader",
    ) as e:
        bench_loader("abc", steps=2, warmup=0)
    assert "\n" not in str(e.value)
    with pytest.raises(ProbeError, match=r"first item of the list given is a int \(3\)"):
        bench_loader([3, 4, 5, 6], steps=2, warmup=0)
    with pytest.raises(ProbeError, match=r"is a dict \(\{'label': 'cat'\}\)"):
        bench_loader([{"label": "cat"}] * 5, steps=2, warmup=0)
    # batches that do hold arrays or bytes, or a batch size given for those that do not, still run
    assert bench_loader([b"x" * 8] * 6, steps=2, warmup=0).ok
    assert bench_loader(iter(range(10)), steps=2, warmup=0, batch_size=1).ok


def test_loader_magic_given_a_str_variable(ipshell, tmp_path):
    from IPython.core.error import UsageError

    ipshell.user_ns["x"] = "abc"
    with pytest.raises(
        UsageError,
        match=r"^x is a str \('abc'\), not a DataLoader: give the name of a "
        r"DataLoader variable$",
    ):
        ipshell.run_line_magic("iobench", "loader x -q --no-save")
    ipshell.user_ns["folder"] = str(tmp_path)
    with pytest.raises(UsageError, match=rf"or give the folder itself: %iobench loader {tmp_path}$"):
        ipshell.run_line_magic("iobench", "loader folder -q --no-save")
