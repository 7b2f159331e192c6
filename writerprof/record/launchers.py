"""Open MPI's mpirun and record's variables: whether mpirun is told to
forward them to ranks on other hosts, and, once CMD has ended, the check
that every rank of the job was probed.

mpirun gives the ranks on its own host its whole environment, so those are
probed whatever it is told; ranks on other hosts get only what it forwards:
the variables `-x` names and those OMPI_MCA_mca_base_env_list names (the
environment's value; `--mca mca_base_env_list` on mpirun's command line
replaces it, and it replaces an MCA parameter file's). Open MPI 5 (PRRTE)
forwards both `-x` and the list; Open MPI 4 and older (ORTE's orterun)
refuses to start when the list is set and `-x` is given ("mixing these two
methods", orte/mca/schizo/ompi/schizo_ompi.c: parse_env). So record adds
its variables to a list the user set in the environment (which rules `-x`
out under 4.x already), sets one beside any mpirun but ORTE's (keeping an
MCA parameter file's list, which it would hide), and tells ORTE's mpirun
nothing: a rank that goes unprobed for it is found afterwards and said.
"""

from __future__ import annotations

import os
import shutil

from writerprof.probes.writerprof_probe import identity

OMPI_ENV_LIST = "OMPI_MCA_mca_base_env_list"  # ';'-separated names (or NAME=value)
PARAM_FILES = "OMPI_MCA_mca_base_param_files"  # ','-separated; "none" for none
_LAUNCHERS = {"mpirun", "mpiexec", "orterun", "oshrun", "prterun"}


def forward(env: dict, names: list[str], command: list[str]) -> None:
    """Name `names` in env's (CMD's) OMPI_MCA_mca_base_env_list where no
    Open MPI that CMD may run refuses it, keeping what the user listed."""
    listed = env.get(OMPI_ENV_LIST)
    if listed is None:
        found = launchers(command, env)
        if any(orte(path) for path in found):
            return  # ORTE's mpirun would refuse it beside a -x; its host's ranks inherit record's variables
        listed = _param_file_list(env, found)
    kept = [v for v in (listed or "").split(";") if v]
    env[OMPI_ENV_LIST] = ";".join(kept + [n for n in names if n not in kept])


def launchers(command: list[str], env: dict) -> list[str]:
    """The MPI launchers CMD may run: those its words name (in a shell
    string too) found on its PATH, else every mpirun and mpiexec there (a
    script that runs `mpirun` runs the first)."""
    path = env.get("PATH", os.defpath)
    named = {token for word in command for token in word.split() if os.path.basename(token) in _LAUNCHERS}
    found = [p for p in (shutil.which(token, path=path) for token in sorted(named)) if p]
    return found or [p for p in (os.path.join(d, name) for d in path.split(os.pathsep) if d
                                 for name in ("mpirun", "mpiexec")) if os.access(p, os.X_OK)]


def orte(launcher: str) -> bool:
    """Whether the launcher is Open MPI's before 5.0: mpirun is a link to
    ORTE's orterun, with ORTE's daemon orted beside it."""
    real = os.path.realpath(launcher)
    return os.path.basename(real) == "orterun" or os.path.exists(os.path.join(os.path.dirname(real), "orted"))


def _param_file_list(env: dict, found: list[str]) -> str | None:
    """mca_base_env_list's value in the first MCA parameter file Open MPI
    reads that sets it (the environment's value would hide it): the files
    PARAM_FILES names, else the user's and each launcher's installation's."""
    if PARAM_FILES in env:
        files = env[PARAM_FILES].split(",")
    else:
        files = [os.path.join(env["HOME"], ".openmpi", "mca-params.conf")] if env.get("HOME") else []
        files += [os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(p))), "etc",
                               "openmpi-mca-params.conf") for p in found]
    for name in files:
        try:
            with open(name, encoding="utf-8", errors="replace") as file:
                lines = file.read().splitlines()
        except OSError:  # "none", a file that is not there: Open MPI skips it too
            continue
        for line in lines:
            key, equals, value = line.partition("=")
            if equals and key.strip() == "mca_base_env_list" and not line.lstrip().startswith("#"):
                return value.strip().strip("\"'")
    return None


def unprobed_ranks(run, environ=os.environ) -> list[str]:
    """A warning line when the probed processes carry fewer ranks than the
    world size they journaled. Not for a world record itself runs in as one
    rank (one record per rank: the others are not its to probe), which it
    tells by its own launcher's variables (an sbatch script's SLURM_PROCID
    is no reason to leave out the ranks of the mpirun it runs)."""
    own = identity.rank(environ)["source"]
    ranked = [e["data"] for e in run.events_of("process")
              if e["data"].get("rank") is not None and e["data"].get("source") != own]
    size = max((d.get("world_size") or 0 for d in ranked), default=0)
    missing = sorted(set(range(size)) - {d["rank"] for d in ranked})
    if not missing:
        return []
    shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
    return [f"{len(missing)} of {size} ranks not probed here (rank{'s' * (len(missing) > 1)} {shown}): a rank on "
            f"another host needs record's variables forwarded (Open MPI 4: list yours in {OMPI_ENV_LIST} "
            f"instead of -x, and record adds its own) or its host's part merged (writerprof merge)"]
