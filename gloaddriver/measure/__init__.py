"""What a run measures: per-op stats and histograms, the timeline, syscall counters,
the profiler, the server's own metrics, the manifest, and the shape of a phase's result."""
from __future__ import absolute_import, division, print_function
