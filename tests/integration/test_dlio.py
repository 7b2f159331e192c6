"""Real DLIO 2.0.0 (PyPI dlio-benchmark), PyTorch checkpointing, 2 ranks under
MPICH's mpiexec, recorded: every checkpoint file a save of its rank (each rank
torch.saves its own, through a Python file object, in C++), its bytes the
file's on disk; the DataLoader's forked workers are readers, never writers;
no warning."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from writerprof.analysis import saves
from writerprof.run import load
from writerprof.run.roles import roles

from dlio_env import dlio_venv
from helpers import TARGETS, writerprof_command

pytestmark = pytest.mark.dlio

RANKS, CHECKPOINTS, MODEL_BYTES = 2, 3, 4 << 20
WORKLOAD = f"""
model: ckpt_small
framework: pytorch
workflow: {{generate_data: False, train: True, checkpoint: True, evaluation: False, profiling: False}}
dataset: {{data_folder: data, format: npz, num_files_train: 8, num_samples_per_file: 1, record_length: 4096}}
reader: {{data_loader: pytorch, batch_size: 1, read_threads: 1, multiprocessing_context: fork,
         file_shuffle: seed, sample_shuffle: seed}}
train: {{epochs: {CHECKPOINTS}, computation_time: 0.0}}
checkpoint: {{checkpoint_folder: checkpoints, checkpoint_after_epoch: 1, epochs_between_checkpoints: 1,
             type: all_ranks, model_size: {MODEL_BYTES}, num_layers: 0, layer_parameters: [],
             optimization_groups: []}}
output: {{folder: output}}
"""
# TensorFlow is imported whatever the framework: quiet; DFTracer off if present.
QUIET = {"TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "3", "DFTRACER_ENABLE": "0", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    venv = dlio_venv()
    work = tmp_path_factory.mktemp("dlio")
    (work / "conf" / "workload").mkdir(parents=True)
    (work / "conf" / "workload" / "ckpt.yaml").write_text(WORKLOAD)
    env = {**os.environ, **QUIET}
    dlio = [str(venv / "bin" / "mpiexec"), "-n", str(RANKS), str(venv / "bin" / "dlio_benchmark"),
            "--config-dir", str(work / "conf"), "workload=ckpt"]
    generate = subprocess.run(dlio + [f"hydra.run.dir={work}/hydra/gen", "++workload.workflow.generate_data=True",
                                      "++workload.workflow.train=False", "++workload.workflow.checkpoint=False",
                                      "++workload.output.folder=output-gen"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert generate.returncode == 0, generate.stdout[-2000:] + generate.stderr[-2000:]
    plain = subprocess.run(dlio + [f"hydra.run.dir={work}/hydra/plain", "++workload.output.folder=output-plain"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=600)
    done = subprocess.run(writerprof_command() + ["record", "-o", str(work / "run"), "--"] + dlio
                          + [f"hydra.run.dir={work}/hydra/run"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    report = subprocess.run(writerprof_command() + ["report", "--json", str(work / "run")], capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    return work, plain, done, json.loads(report.stdout)


def test_dlio_itself_is_unharmed(recorded):
    _, plain, done, _ = recorded
    assert done.returncode == plain.returncode == 0, done.stderr[-2000:]


def test_every_checkpoint_file_is_a_save_of_its_rank(recorded):
    work, _, _, _ = recorded
    run = load(work / "run")
    on_disk = {str(p): p.stat().st_size for p in (work / "checkpoints").iterdir()}
    assert len(on_disk) == RANKS * CHECKPOINTS
    found = saves.find(run)
    assert {s["path"]: s["bytes"] for s in found} == on_disk
    for s in found:
        rank = int(re.search(r"-(\d+)\.pt$", s["path"]).group(1))
        assert s["rank"] == rank and s["writer_pid"] == s["producer_pid"], s
        assert s["bytes"] > MODEL_BYTES and s["write_s"] > 0 and s["duration_s"] > 0
        assert s["get_wait_s"] is None and s["startup"] == {}  # a rank's wait for data is not its save's


def test_dataloader_workers_are_readers_not_writers(recorded):
    work, _, _, _ = recorded
    run = load(work / "run")
    role = dict(zip(run.processes["pid"].tolist(), roles(run).tolist()))
    rank_pids = {s["writer_pid"] for s in saves.find(run)}
    assert len(rank_pids) == RANKS and all(role[pid] == "writer" for pid in rank_pids)
    workers = [pid for pid, r in zip(run.processes["pid"].tolist(), run.processes["role"].tolist())
               if r == "fork_child"]
    assert workers and all(role[pid] == "reader" for pid in workers), role


def test_no_warning(recorded):
    _, _, _, summary = recorded
    assert [d for d in summary["diagnoses"] if d["severity"] == "warning"] == []
    assert len(summary["saves"]) == RANKS * CHECKPOINTS


def test_torch_save_from_a_writer_child(tmp_path):
    """torch.save to a path (C++ streams) in a forkserver child: one save per file, with its start-up."""
    venv = dlio_venv()
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--",
                                                  str(venv / "bin" / "python"), os.path.join(TARGETS, "torch_writer.py"),
                                                  str(out), "forkserver"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, **QUIET})
    assert done.returncode == 0, done.stderr[-2000:]
    own = [json.loads(line) for line in done.stdout.splitlines()]
    found = saves.find(load(tmp_path / "run"))
    assert sorted((s["path"], s["bytes"], s["writer_pid"]) for s in found) == sorted(
        (o["path"], os.path.getsize(o["path"]), o["pid"]) for o in own)
    assert all(s["start_method"] == "forkserver" and s["startup"] and s["write_s"] > 0 for s in found)

