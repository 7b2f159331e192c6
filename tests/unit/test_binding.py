"""A launcher's binding as the report states it: per bound rank, its CPUs and
whether its writers started with the same."""

from writerprof.analysis.binding import launcher_binding
from writerprof.render.format import binding
from writerprof.render.html import report_html
from writerprof.synthetic import make_topology

TOPOLOGY = {"a": make_topology(nodes=1, cpus_per_node=4, smt=False)}  # the run's snapshots, per host


def _proc(role, rank, cpus, pid=1, host="a"):
    return {"role": role, "rank": rank, "inherited_cpus": cpus, "host": host, "pid": pid}


def test_bound_ranks_and_whether_their_writers_inherit():
    procs = [_proc("producer", 0, [0], 10), _proc("writer", 0, [0], 11), _proc("writer", 0, [0], 12),
             _proc("producer", 1, [1], 20), _proc("writer", 1, [0, 1, 2, 3], 21),
             _proc("producer", 2, [0, 1, 2, 3], 30), _proc("producer", None, [3], 40)]
    bound = launcher_binding(procs, TOPOLOGY)
    assert [(b["rank"], b["cpus"], b["writers_inherit"], b["writer_cpus"]) for b in bound] == [
        (0, [0], True, [[0]]), (1, [1], False, [[0, 1, 2, 3]])]  # rank 2 is unbound, pid 40 no rank
    lines = [binding(b) for b in bound]
    assert lines[0] == "rank 0: started bound to CPU 0 (1 of a's 4 CPUs: the launcher's binding); its writers inherit it"
    assert lines[1].endswith("its writers started on CPU 0-3")


def test_no_writer_seen():
    (b,) = launcher_binding([_proc("producer", 0, [2])], TOPOLOGY)
    assert not b["writers_inherit"] and binding(b).endswith("no writer of its was seen")


def test_the_html_report_states_the_binding_too(tmp_path):
    from writerprof.analysis.summary import summarize
    from writerprof.run import load
    from writerprof.synthetic import Scenario, write_run

    write_run(tmp_path / "run", Scenario(producer_cpus="0", writer_cpus_inherited="0"))
    summary = summarize(load(tmp_path / "run"))
    assert summary["binding"]
    page = report_html(summary, {})
    assert "<h2>The launcher's binding</h2>" in page and "the launcher&#x27;s binding); its writers inherit it" in page
