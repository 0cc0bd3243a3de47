"""oneside-bench: scaling studies over oneside's micro-benchmarks and mini-apps, with their MPI
and OpenSHMEM peers, recorded in one JSON schema, reported as markdown and plots, and compared
run against run. Standard library only; matplotlib (Debian's python3-matplotlib) for plots."""
