"""nbbench.topology on fixture trees: mountinfo, partitions, dm / md slaves, queue attributes, filesystem kinds.

tests/fixtures/topology/box is a machine as sysfs shows it: /sys/dev/block links into
/sys/devices, an NVMe disk with two partitions, two SATA disks, a dm device (LVM) over
an NVMe and a SATA partition, an md RAID1 over two partitions.  tests/fixtures/doctor/
trees have no /sys/dev/block: devices are found by the mount source there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbbench import topology
from nbbench.topology import Unreadable

FIX = Path(__file__).parent / "fixtures"
BOX = str(FIX / "topology" / "box")
DOCKER = str(FIX / "doctor" / "docker")
HARD = str(FIX / "doctor" / "hardened")


# ------------------------------------------------------------------ mount table
def test_mountinfo_parsing_and_escapes():
    ms = topology.read_mounts(DOCKER)
    assert [m.mount_point for m in ms][:4] == ["/", "/proc", "/dev", "/dev/shm"]
    bucket = [m for m in ms if m.fstype == "fuse.s3fs"][0]
    assert bucket.mount_point == "/mnt/my bucket"  # \040 unescaped
    nfs = topology.find_mount("/dataset/train/n01440764/x.JPEG", ms)
    assert (nfs.fstype, nfs.source, nfs.option("rsize")) == ("nfs4", "10.0.0.5:/exports/imagenet", "131072")
    assert topology.find_mount("/datasets", ms).mount_point == "/"  # a prefix of a name is not a parent
    assert topology.find_mount("/dev/shm/x", ms).mount_point == "/dev/shm"


def test_octal_escapes_options_readonly_and_devno():
    ms = topology.read_mounts(BOX)
    assert len(ms) == 12  # the line that is not mountinfo is skipped
    odd = topology.find_mount("/mnt/my disk\ttab\\back/x", ms)
    assert odd.mount_point == "/mnt/my disk\ttab\\back" and odd.fs_root == "/exports/a b"
    assert (odd.devno, odd.major, odd.minor, odd.line) == ("8:1", 8, 1, 7)
    raid = topology.find_mount("/raid/set", ms)
    assert raid.readonly and not topology.find_mount("/data", ms).readonly
    assert raid.option("stripe") == "256" and raid.option("ro") == "" and raid.option("size") is None
    data = topology.find_mount("/data/x", ms)
    assert data.optional == ["shared:5"] and data.options == ["rw", "noatime"]
    assert data.all_options == ["rw", "noatime", "attr2", "inode64"]


def test_stacked_mounts_last_one_wins():
    ms = topology.read_mounts(BOX)
    shm = topology.find_mount("/dev/shm/batch", ms)
    assert (shm.mount_id, shm.source, shm.option("size")) == (27, "shm", "16777216k")
    text = (
        "25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=65536k\n"
        "30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=16777216k\n"
    )
    assert topology.find_mount("/dev/shm", topology.parse_mountinfo(text)).mount_id == 30


def test_longest_prefix_and_relative_paths():
    ms = topology.read_mounts(BOX)
    assert topology.find_mount("/dev/hugepages/x", ms).fstype == "hugetlbfs"
    assert topology.find_mount("/dev/null", ms).fstype == "devtmpfs"
    assert topology.find_mount("/database", ms).mount_point == "/"
    assert topology.find_mount("data/../data/x", ms).mount_point == "/data"
    assert topology.mount_of("/srv/nfs/a", BOX).fstype == "nfs4"


def test_missing_or_empty_mount_table(tmp_path):
    with pytest.raises(Unreadable, match="/proc/self/mountinfo does not exist"):
        topology.read_mounts(tmp_path)
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_text("garbage\n")
    with pytest.raises(Unreadable, match="lists no mounts"):
        topology.read_mounts(tmp_path)
    assert topology.mount_of("/x", tmp_path) is None


# ------------------------------------------------------------------ filesystems
def test_memory_backed_filesystems():
    for fs in ("tmpfs", "ramfs", "hugetlbfs", "devtmpfs"):
        assert topology.is_memory_backed(fs) and topology.fs_kind(fs) == "memory", fs
    for fs in ("ext4", "xfs", "overlay", "nfs4", "fuse.s3fs", "9p", "proc"):
        assert not topology.is_memory_backed(fs), fs
    ms = topology.read_mounts(BOX)
    backed = {m.mount_point for m in ms if m.memory_backed}
    assert backed == {"/dev", "/dev/shm", "/dev/hugepages", "/ram"}


def test_filesystem_kinds():
    kinds = {
        "overlay": "overlay",
        "nfs4": "network",
        "nfs": "network",
        "cifs": "network",
        "ceph": "network",
        "virtiofs": "hostshare",
        "9p": "hostshare",
        "fuse": "fuse",
        "fuse.s3fs": "fuse",
        "fuse.vmhgfs-fuse": "hostshare",
        "ext4": "other",
        "xfs": "other",
        "proc": "other",
    }
    for fs, kind in kinds.items():
        assert topology.fs_kind(fs) == kind, fs
    assert topology.find_mount("/work/x", topology.read_mounts(BOX)).kind == "overlay"


# ---------------------------------------------------------------- block devices
def _dev(path):
    ms = topology.read_mounts(BOX)
    return topology.block_device(BOX, topology.find_mount(path, ms))


def test_partition_resolves_to_its_disk():
    d = _dev("/")  # 259:2, nvme0n1p2
    assert (d.name, d.disk, d.partition, d.parent) == ("nvme0n1p2", "nvme0n1", True, "nvme0n1")
    assert d.how == "/sys/dev/block/259:2 -> nvme0n1p2; partition of nvme0n1"
    assert d.queue_dir == "/sys/block/nvme0n1/queue"
    assert d.slaves == [] and d.physical == []
    sda1 = topology.device_by_devno(8, 1, BOX)
    assert (sda1.name, sda1.disk, sda1.parent) == ("sda1", "sda", "sda")


def test_whole_disk():
    d = topology.device_by_devno(259, 0, BOX)
    assert (d.name, d.disk, d.partition, d.parent) == ("nvme0n1", "nvme0n1", False, None)
    assert d.how == "/sys/dev/block/259:0 -> nvme0n1"
    assert topology.device_by_devno(7, 99, BOX) is None
    assert topology.device_by_name("sdz", BOX) is None


def test_dm_device_slaves_and_their_disks():
    d = _dev("/data/train")  # 253:0, LVM over nvme0n1p1 and sda2
    assert (d.name, d.disk, d.partition, d.dm_name) == ("dm-0", "dm-0", False, "vg0-data")
    assert d.slaves == ["nvme0n1p1", "sda2"]
    assert d.physical == ["nvme0n1", "sda"]


def test_md_device_slaves_and_their_disks():
    d = _dev("/raid")
    assert (d.name, d.disk, d.dm_name) == ("md0", "md0", "")
    assert d.slaves == ["sdb1", "sdc1"] and d.physical == ["sdb", "sdc"]


def test_without_dev_block_links_the_mount_source_names_the_device():
    ms = topology.read_mounts(DOCKER)
    part = topology.block_device(DOCKER, topology.find_mount("/data", ms))
    assert (part.name, part.disk, part.partition) == ("nvme0n1p1", "nvme0n1", True)
    assert part.how == "mount source /dev/nvme0n1p1; partition of nvme0n1"
    dm = topology.block_device(DOCKER, topology.find_mount("/scratch", ms))
    assert (dm.name, dm.slaves, dm.physical) == ("dm-0", ["sda2"], ["sda"])
    assert dm.how == "/dev/mapper/vg0-scratch is dm-0 (/sys/block/dm-0/dm/name)"


def test_mounts_without_a_block_device_say_why(tmp_path):
    ms = topology.read_mounts(BOX)
    with pytest.raises(Unreadable, match=r"nfs4 at /srv/nfs has no block device of its own \(anonymous device 0:46"):
        topology.block_device(BOX, topology.find_mount("/srv/nfs", ms))
    gone = topology.parse_mountinfo("1 0 8:99 / / rw - ext4 /dev/sdq9 rw\n")[0]
    with pytest.raises(Unreadable, match="sdq9 is neither a disk nor a partition"):
        topology.block_device(BOX, gone)
    with pytest.raises(Unreadable, match="/sys/block does not exist"):
        topology.block_device(tmp_path, gone)
    nosrc = topology.parse_mountinfo("1 0 8:99 / / rw - ext4 rootfs rw\n")[0]
    with pytest.raises(Unreadable, match=r"no block device found for rootfs \(8:99\) under /sys"):
        topology.block_device(BOX, nosrc)


def test_queue_attributes_and_request_limits():
    q = topology.device_by_devno(259, 2, BOX).queue()  # a partition: its disk's queue
    assert q.dir == "/sys/block/nvme0n1/queue"
    assert (q.read_ahead_kb, q.scheduler, q.schedulers, q.rotational, q.nr_requests) == (
        128,
        "none",
        "[none] mq-deadline",
        0,
        1023,
    )
    assert (q.max_segments, q.max_sectors_kb, q.max_hw_sectors_kb, q.logical_block_size) == (127, 512, 2048, 512)
    assert q.max_segment_size == 65536
    assert q.errors == {}
    sda = topology.device_by_devno(8, 0, BOX).queue()
    assert (sda.scheduler, sda.rotational, sda.max_segments, sda.logical_block_size) == ("bfq", 1, 168, 4096)


def test_queue_attributes_missing_or_garbled_say_why():
    dm = topology.device_by_devno(253, 0, BOX)
    q = dm.queue()
    assert q.scheduler == "none" and q.read_ahead_kb == 8192 and q.max_sectors_kb == 512
    assert q.nr_requests is None and q.errors["nr_requests"] == "/sys/block/dm-0/queue/nr_requests does not exist"
    assert q.max_segments is None and "invalid literal" in q.errors["max_segments"]
    assert dm.queue_attr("max_hw_sectors_kb") == "2048"
    with pytest.raises(Unreadable, match="does not exist"):
        dm.queue_attr("nr_requests")


def test_scheduler_parsing():
    assert topology.parse_scheduler("none [mq-deadline] kyber bfq\n") == "mq-deadline"
    assert topology.parse_scheduler("[mq-deadline] none") == "mq-deadline"
    assert topology.parse_scheduler("none\n") == "none"
    assert topology.parse_scheduler("  \n") is None


# ------------------------------------------------------------------ paths
def test_device_of_a_live_path_through_a_fixture_sysfs(tmp_path):
    st = os.stat(tmp_path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:
        pytest.skip("this filesystem has an anonymous device number")
    target = tmp_path / "sys" / "devices" / "virtual" / "block" / "vdq"
    target.mkdir(parents=True)
    (tmp_path / "sys" / "dev" / "block").mkdir(parents=True)
    os.symlink("../../devices/virtual/block/vdq", tmp_path / "sys" / "dev" / "block" / f"{major}:{minor}")
    dev, mount = topology.device_of_path(tmp_path, root=tmp_path)
    assert dev.name == "vdq" and not dev.partition
    assert mount is None  # no mount table in this root


def test_device_of_an_anonymous_path_comes_from_its_mount_source(tmp_path):
    # a btrfs subvolume shows an anonymous device number: the mount's /dev source names the disk
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "mountinfo").write_text(
        f"1 0 0:40 / / rw - overlay overlay rw\n2 1 0:41 /@data {tmp_path} rw - btrfs /dev/sdx2 rw\n"
    )
    disk = root / "sys" / "block" / "sdx"
    (disk / "sdx2").mkdir(parents=True)
    (disk / "sdx2" / "partition").write_text("2\n")
    dev, mount = topology.device_of_path(tmp_path, root=root)
    assert mount.fstype == "btrfs" and (dev.name, dev.disk, dev.partition) == ("sdx2", "sdx", True)
    dev, mount = topology.device_of_path("/", root=root)  # on the overlay: no device in this sysfs
    assert dev is None and mount.fstype == "overlay"
    with pytest.raises(OSError):
        topology.device_of_path(tmp_path / "nope", root=root)
