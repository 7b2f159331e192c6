"""The analysis: pure functions from a loaded run to findings (processes,
saves, their decomposition, diagnoses, groups per host and role and per save
index, and the plots' data: affinity, buffer placement, chunk timeline) and
from findings to comparisons. summary.summarize(run) gathers them; the
renderers take that summary (or a comparison) and never a run, and only
format it."""
