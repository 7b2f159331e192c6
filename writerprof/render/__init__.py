"""Renderers: terminal text, matplotlib plots and self-contained HTML of what
the analysis found. They format; they compute nothing of their own."""
