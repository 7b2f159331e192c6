"""A process's rank, local rank and world size from its launcher's variables,
when one launcher runs inside another. The environments are those a one-node
Slurm 22.05 (MpiDefault=pmi2) gave: `srun -n 2 env`, and MPICH's Hydra
`mpiexec -n 2 env` inside `salloc -n 2`, trimmed to the variables that count."""

import pytest

from writerprof.probes.writerprof_probe.identity import rank


def _srun(task):
    """A task of `srun -n 2`: srun's pmi2 plugin sets PMI_RANK and PMI_SIZE, no MPI_LOCALRANKID."""
    return {"PMI_FD": str(11 + 2 * task), "PMI_JOBID": "7.0", "PMI_RANK": str(task), "PMI_SIZE": "2",
            "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(task), "SLURM_LOCALID": str(task),
            "SLURM_NTASKS": "2", "SLURM_NPROCS": "2", "SLURM_STEP_NUM_TASKS": "2", "SLURM_NODEID": "0",
            "SLURM_MPI_TYPE": "pmi2", "SLURM_CPU_BIND": "quiet,mask_cpu:0x1,0x2"}


def _hydra_in_salloc(rank_number):
    """A rank of Hydra's `mpiexec -n 2` in an allocation: Hydra started its one
    proxy with srun, so every rank carries the proxy's SLURM_PROCID 0 and SLURM_NTASKS 1."""
    return {"PMI_RANK": str(rank_number), "PMI_SIZE": "2", "MPI_LOCALRANKID": str(rank_number),
            "MPI_LOCALNRANKS": "2", "SLURM_JOB_ID": "8", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0",
            "SLURM_LOCALID": "0", "SLURM_NTASKS": "1", "SLURM_NPROCS": "1", "SLURM_STEP_NUM_TASKS": "1"}


@pytest.mark.parametrize("task", [0, 1])
def test_srun_pmi2_takes_the_local_rank_from_slurm(task):
    assert rank(_srun(task)) == {"rank": task, "local_rank": task, "world_size": 2, "source": "mpich"}


@pytest.mark.parametrize("rank_number", [0, 1])
def test_hydra_in_an_allocation_keeps_its_own_local_rank(rank_number):
    assert rank(_hydra_in_salloc(rank_number)) == {"rank": rank_number, "local_rank": rank_number,
                                                    "world_size": 2, "source": "mpich"}


@pytest.mark.parametrize("rank_number", [0, 1])
def test_the_proxys_slurm_variables_never_fill_in_for_a_rank(rank_number):
    """Without MPI_LOCALRANKID (as a Hydra that does not set it would start
    it): rank 1's SLURM_PROCID is 0, another process's; rank 0's is 0 too, but
    of a world of 1 where PMI_SIZE says 2. Neither gives its SLURM_LOCALID."""
    environ = {k: v for k, v in _hydra_in_salloc(rank_number).items() if k != "MPI_LOCALRANKID"}
    assert rank(environ) == {"rank": rank_number, "local_rank": None, "world_size": 2, "source": "mpich"}


def test_a_missing_world_size_comes_from_the_same_rank_elsewhere():
    environ = {"PMI_RANK": "3", "SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NTASKS": "8"}
    assert rank(environ) == {"rank": 3, "local_rank": 1, "world_size": 8, "source": "mpich"}
    environ["SLURM_PROCID"] = "4"  # another rank's numbering: nothing of it
    assert rank(environ) == {"rank": 3, "local_rank": None, "world_size": None, "source": "mpich"}


def test_an_unreadable_rank_takes_nothing_from_elsewhere():
    environ = {"PMI_RANK": "x", "SLURM_PROCID": "x", "SLURM_LOCALID": "0", "SLURM_NTASKS": "2"}
    assert rank(environ) == {"rank": None, "local_rank": None, "world_size": None, "source": "mpich"}


def test_the_first_source_still_wins_where_it_has_everything():
    environ = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4",
               "PMIX_RANK": "1", "SLURM_PROCID": "1", "SLURM_LOCALID": "0", "SLURM_NTASKS": "4"}
    assert rank(environ) == {"rank": 1, "local_rank": 1, "world_size": 4, "source": "openmpi"}


def test_no_launcher():
    assert rank({"HOME": "/root"}) == {"rank": None, "local_rank": None, "world_size": None, "source": None}
