"""Run directories in other tools' formats."""
