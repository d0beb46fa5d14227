"""Reports of campaigns, one module per job.

* :mod:`~commstack.report.document`: assembles ``report/report.md`` (``commstack report``);
* :mod:`~commstack.report.tables`, :mod:`~commstack.report.plots`,
  :mod:`~commstack.report.numbers`: tables and plots of the aggregates, numbers at the printed
  resolution with their spread;
* :mod:`~commstack.report.layout`, :mod:`~commstack.report.published`: layouts of published
  tables, and printing them again from records;
* :mod:`~commstack.report.index`: ``results/README.md``;
* :mod:`~commstack.report.studies`: plugins for the sections in the style of a study.

Markdown tables come from :mod:`commstack.markdown_table`; figures of merit from
:mod:`commstack.figures`. Report modules may import :mod:`commstack.compare`; it imports none of
them.
"""
