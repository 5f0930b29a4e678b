"""The vault on disk: its files, its git repository, staged edits, remotes, purges, usage counters and session sweeps."""
