"""One module per batch scheduler behind one interface (``base.Scheduler``), found by
``registry``; nothing outside ``slurm*.py`` names Slurm (docs/reference/schedulers.md)."""
