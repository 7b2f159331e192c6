import os
from pathlib import Path

import pytest

from writerprof.probes.writerprof_probe import identity
from writerprof.probes.writerprof_probe.numa import PAGE_SIZE
from writerprof.record import procfs
from writerprof.record.system import HOST, System
from writerprof.units import parse_cpu_list

# Files read off a two-node guest kernel (../shared/numavm): a python3 on cpu 0
# holding /dev/shm/wp_fixture_buf, whose 8 MiB were first touched from node 1.
NUMA2 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "numa2"
SAMPLE_PID = "self-sample"  # its directory under NUMA2/proc
needs_numa2 = pytest.mark.skipif(not (NUMA2 / "proc" / SAMPLE_PID).is_dir(),
                                 reason=f"the two-node procfs fixture is not there ({NUMA2})")


# --- fake /proc trees in the kernel's formats ---

def stat_line(pid, comm="python3", *, state="S", ppid=1, minflt=10, majflt=1, utime=5, stime=2,
              threads=1, start=1000, rss=100, cpu=0, args=(0, 0)):
    fields = ["0"] * 50
    for index, value in ((0, state), (1, ppid), (7, minflt), (9, majflt), (11, utime), (12, stime),
                         (17, threads), (19, start), (21, rss), (36, cpu), (45, args[0]), (46, args[1])):
        fields[index] = str(value)
    return f"{pid} ({comm}) {' '.join(fields)}\n"


def write_process(root, pid, *, children=None, cpus="0-1", voluntary=7, write_bytes=4096, io=True,
                  cmdline="python3\0-c\0pass\0", maps="", numa_maps=None, **stat):
    """/proc/PID of a fake tree; children: tid -> child pids (None: no children files)."""
    directory = Path(root) / "proc" / str(pid)
    (directory / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
    (directory / "stat").write_text(stat_line(pid, **stat))
    (directory / "status").write_text(
        f"Name:\tpython3\nState:\tS (sleeping)\nPid:\t{pid}\nCpus_allowed:\t3\n"
        f"Cpus_allowed_list:\t{cpus}\nMems_allowed_list:\t0\n"
        f"voluntary_ctxt_switches:\t{voluntary}\nnonvoluntary_ctxt_switches:\t3\n")
    if io:
        (directory / "io").write_text(f"rchar: 1\nwchar: {write_bytes * 2}\nsyscr: 1\nsyscw: 1\n"
                                      f"read_bytes: 0\nwrite_bytes: {write_bytes}\ncancelled_write_bytes: 0\n")
    (directory / "cmdline").write_text(cmdline)
    (directory / "maps").write_text(maps)
    if numa_maps is not None:
        (directory / "numa_maps").write_text(numa_maps)
    for tid, pids in (children or {}).items():
        (directory / "task" / str(tid)).mkdir(exist_ok=True)
        (directory / "task" / str(tid) / "children").write_text("".join(f"{p} " for p in pids))
    return directory


class CountingSystem(System):
    def __init__(self, root):
        super().__init__(root)
        self.reads = []

    def read(self, path):
        self.reads.append(path)
        return super().read(path)


# --- the real files of a two-node kernel ---

@needs_numa2
def test_stat_of_a_real_process():
    stat = procfs.read_stat(System(NUMA2), SAMPLE_PID)
    assert stat == procfs.Stat(state="R", ppid=135, minflt=5084, majflt=115, utime_ns=116 * procfs.TICK_NS,
                               stime_ns=62 * procfs.TICK_NS, threads=1, rss_bytes=6870 * PAGE_SIZE, cpu=0,
                               start_ticks=1503, args=(140730395336206, 140730395336216))


@needs_numa2
def test_status_and_io_of_a_real_process():
    system = System(NUMA2)
    assert procfs.read_status(system, SAMPLE_PID) == procfs.Status(1347, 171, "0")
    assert procfs.read_io(system, SAMPLE_PID) == procfs.Io(write_bytes=0, wchar=50700)


@needs_numa2
def test_shared_memory_placement_of_a_real_process_across_nodes():
    found = procfs.read_shm_numa_maps(System(NUMA2), SAMPLE_PID)
    assert [(e["address"], e["file"], e["pages"], e["huge"]) for e in found] == [
        (0x7f707e0f3000, "/dev/shm/wp_fixture_buf", {1: 2048}, False)]  # 8 MiB, all on node 1


# --- this process, read live ---

def test_this_process_live():
    stat = procfs.read_stat(HOST, os.getpid())
    assert stat.ppid == os.getppid() and stat.state == "R" and stat.threads >= 1
    assert stat.rss_bytes > 0 and stat.utime_ns + stat.stime_ns > 0
    status = procfs.read_status(HOST, os.getpid())
    assert parse_cpu_list(status.cpus) == os.sched_getaffinity(0)
    assert status.voluntary_ctxt >= 0 and status.nonvoluntary_ctxt >= 0
    assert procfs.read_io(HOST, os.getpid()).wchar > 0
    assert procfs.read_exe(HOST, os.getpid()) == os.path.realpath("/proc/self/exe")
    # The probe's created_ns of an exec'd process is the same reading of the same clock.
    assert abs(procfs.start_ns(stat.start_ticks) - identity.start_time_ns()) < 1_000_000


# --- edge cases ---

@pytest.mark.parametrize("comm", ["my (weird) proc", ") 1 2 3 (", "a b", ""])
def test_stat_comm_with_spaces_and_parentheses(comm):
    stat = procfs.parse_stat(stat_line(42, comm, ppid=7, threads=3, start=99, cpu=5))
    assert (stat.ppid, stat.threads, stat.start_ticks, stat.cpu) == (7, 3, 99, 5)


def test_status_without_the_counters():
    # Older or sandboxed kernels may lack lines: unknown, not an error.
    assert procfs.parse_status("Name:\tx\nState:\tS\n") == procfs.Status(-1, -1, None)
    assert procfs.parse_status("Cpus_allowed_list:\t2,4-5") == procfs.Status(-1, -1, "2,4-5")


def test_io_names_exactly():
    # cancelled_write_bytes must not be taken for write_bytes.
    text = "cancelled_write_bytes: 9\nwchar: 5\nwrite_bytes: 3\n"
    assert procfs.parse_io(text) == procfs.Io(write_bytes=3, wchar=5)


def test_unreadable_io_is_minus_one(tmp_path):
    write_process(tmp_path, 42, io=False)
    assert procfs.read_io(System(tmp_path), 42) == procfs.UNREADABLE_IO == (-1, -1)


def test_gone_process_reads_none(tmp_path):
    system = System(tmp_path)
    assert procfs.read_stat(system, 42) is None and procfs.read_status(system, 42) is None
    assert procfs.read_cmdline(system, 42) == [] and procfs.read_exe(system, 42) is None


def test_cmdline():
    assert procfs.parse_cmdline("python\0-c\0print(1)\0") == ["python", "-c", "print(1)"]
    assert procfs.parse_cmdline("python\0\0") == ["python", ""]  # an empty argument stays
    assert procfs.parse_cmdline("writer: rank 3") == ["writer: rank 3"]  # a rewritten title


MAPS = """\
7f0000000000-7f0000100000 rw-s 00000000 00:1e 2                          /dev/shm/psm_a (deleted)
7f0000200000-7f0000300000 rw-s 00000000 00:1e 3                          /dev/shm/wp buf
7f0000400000-7f0000401000 r--p 00000000 00:16 9                          /opt/dev/shm/lib.so
7f0000500000-7f0000600000 rw-p 00000000 00:00 0 
"""
NUMA_MAPS = """\
7f0000000000 default file=/dev/shm/psm_a\\040(deleted) dirty=256 N0=200 N1=56 kernelpagesize_kB=4
7f0000200000 default file=/dev/shm/wp\\040buf dirty=3 N1=3 kernelpagesize_kB=4
7f0000400000 default file=/opt/dev/shm/lib.so mapped=1 N0=1 kernelpagesize_kB=4
7f0000500000 default anon=5 dirty=5 N0=5 kernelpagesize_kB=4
"""


def test_shared_memory_mappings_by_their_maps_path():
    # numa_maps escapes a space as \040; maps shows the path as it is.
    found = procfs.shm_numa_maps(MAPS, NUMA_MAPS)
    assert [(hex(e["address"]), e["file"], e["pages"]) for e in found] == [
        ("0x7f0000000000", "/dev/shm/psm_a (deleted)", {0: 200, 1: 56}),
        ("0x7f0000200000", "/dev/shm/wp buf", {1: 3})]


def test_numa_maps_is_read_only_with_shared_memory_mapped(tmp_path):
    write_process(tmp_path, 42, maps=MAPS.splitlines(True)[-1], numa_maps=NUMA_MAPS)
    write_process(tmp_path, 43, maps=MAPS)  # a kernel without NUMA: no numa_maps
    system = CountingSystem(tmp_path)
    assert procfs.read_shm_numa_maps(system, 42) == []
    assert procfs.read_shm_numa_maps(system, 43) == []
    assert procfs.read_shm_numa_maps(system, 44) == []  # gone
    assert "/proc/42/numa_maps" not in system.reads and "/proc/43/numa_maps" in system.reads


def test_tree_from_the_children_of_every_thread(tmp_path):
    write_process(tmp_path, 100, children={100: [101], 150: [102]})  # 102 forked by thread 150
    write_process(tmp_path, 101, ppid=100, children={101: [103]})
    write_process(tmp_path, 102, ppid=100, children={102: []})
    write_process(tmp_path, 103, ppid=101, children={103: []})
    write_process(tmp_path, 200, children={200: []})
    assert procfs.ProcessTree(System(tmp_path), 100).pids() == [100, 101, 102, 103]
    assert procfs.ProcessTree(System(tmp_path), 999).pids() == [999]  # gone: the reader finds out


def test_a_tree_shared_gives_a_recent_look_to_who_asks_for_one(tmp_path):
    write_process(tmp_path, 100, children={100: []})
    tree = procfs.ProcessTree(System(tmp_path), 100)
    assert tree.pids() == [100]
    write_process(tmp_path, 100, children={100: [101]})
    write_process(tmp_path, 101, ppid=100, children={101: []})
    assert tree.pids(fresh_ns=60 * 10**9) == [100]  # the last look's, not read again
    assert tree.pids() == [100, 101]


def test_the_tree_is_looked_at_again_only_once_a_pid_was_given_out(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/loadavg").write_text("0.10 0.20 0.30 1/90 500\n")
    write_process(tmp_path, 100, children={100: []})
    tree = procfs.ProcessTree(System(tmp_path), 100)
    assert tree.pids() == [100]
    # A child whose pid was given out before the look above, linked to its parent after it: the look
    # is made once more after the last pid stood still, and finds it.
    write_process(tmp_path, 100, children={100: [101]})
    write_process(tmp_path, 101, ppid=100, children={101: []})
    assert tree.pids() == [100, 101]
    write_process(tmp_path, 100, children={100: [101, 102]})  # (no pid given out: cannot happen)
    assert tree.pids() == [100, 101]  # not looked at
    (tmp_path / "proc/loadavg").write_text("0.10 0.20 0.30 1/91 502\n")
    write_process(tmp_path, 102, ppid=100, children={102: []})
    assert tree.pids() == [100, 101, 102]


def test_threads_listed_again_only_once_a_pid_was_given_out_or_their_count_changed(tmp_path):
    task = tmp_path / "proc/100/task"

    def thread(tid):
        (task / str(tid)).mkdir(parents=True, exist_ok=True)
        (task / str(tid) / "stat").write_text(f"{tid} (t) S")

    thread(100)
    reader = procfs.TaskFiles(System(tmp_path), 100, "stat", keep_open=0)

    def tids(given, threads):
        return sorted(tid for tid, _ in reader.read(given, threads))

    assert tids(b"7", 1) == ["100"]
    assert tids(b"7", 1) == ["100"]  # listed once more: the last pid had not stood yet
    thread(101)  # (no pid given out and the same count: cannot happen)
    assert tids(b"7", 1) == ["100"]  # not listed
    assert tids(b"7", 2) == ["100", "101"]  # another count
    thread(102)
    assert tids(b"9", 2) == ["100", "101", "102"]  # a pid given out
    assert tids(None, 3) == ["100", "101", "102"]  # (unknown: listed)


def test_tree_by_ppid_scan_without_children_files(tmp_path):
    for pid, ppid in ((1, 0), (2, 0), (100, 1), (101, 100), (102, 101), (200, 1), (201, 2)):
        write_process(tmp_path, pid, ppid=ppid)
    system = CountingSystem(tmp_path)
    tree = procfs.ProcessTree(system, 100)
    assert tree.pids() == [100, 101, 102]
    write_process(tmp_path, 103, ppid=100)
    system.reads.clear()
    assert tree.pids() == [100, 101, 103, 102]
    # Processes found outside the tree are not read again.
    assert {p for p in system.reads if p.endswith("/stat")} == {f"/proc/{p}/stat" for p in (100, 101, 102, 103)}
    assert procfs.ProcessTree(System(tmp_path), 999).pids() == [999]
