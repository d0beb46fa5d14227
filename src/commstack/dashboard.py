"""A static, self-contained dashboard of a results store: one ``index.html`` that opens from disk
or any static host (CI pages), with Plotly's JavaScript (from the ``plotly`` package) and the
data inlined; nothing is fetched when it is viewed.

What it shows, per machine, stack and benchmark (filters at the top):
  * the size curves of every campaign: the median of the repeats at each message size with its
    95 % interval (``commstack.history.summarize``), hollow markers where a run was unclean
    (oversubscribed, or its placement contradicted the mapping asked for);
  * the history of one message size over the campaigns' dates, stack changes marked;
  * every campaign with its failed and unclean runs, and the failed runs themselves;
  * compare results: each campaign against the one that ran its matrix before it
    (``commstack.compare_previous``), with ``commstack compare``'s verdict.

The numbers are those of ``commstack history`` over the same store (one summary for both).

Simulated, not measured (``commstack.simulated``): a curve of simulated runs is drawn dotted with
square markers, its legend entry and label saying "simulated on <platform>"; the campaigns table
names each campaign's simulated platforms, and compare results say when the campaigns compared
were simulated (a chain never sets a simulated campaign against a measured one).
"""

from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Sequence

from commstack.history import ROW_COLUMNS, Series, history
from commstack.optional import require
from commstack.simulated import WORD

PLOTLY = ("plotly", "dashboard", "commstack dashboard")
MAX_FAILED = 500  # failed runs listed (all are counted)
_CAMPAIGNS = """
    SELECT campaign, machine, count(DISTINCT (point_id, repeat, attempt)) AS runs,
           count(DISTINCT CASE WHEN status <> 'ok' THEN (point_id, repeat, attempt) END) AS failed,
           count(DISTINCT CASE WHEN coalesce(oversubscribed, false)
                                     OR coalesce(placement = 'contradicts', false)
                               THEN (point_id, repeat, attempt) END) AS unclean,
           min(start) AS first, max(start) AS last, bool_or(imported) AS imported,
           min(mpi_version) AS mpi_version,
           CASE WHEN count(simulated) = 0 THEN NULL
                ELSE 'simulated on ' || string_agg(DISTINCT simulated, ' and ' ORDER BY simulated)
                     || CASE WHEN bool_or(simulated IS NULL AND NOT imported)
                             THEN ' and measured' ELSE '' END END AS simulated
    FROM results GROUP BY campaign, machine ORDER BY machine, first NULLS LAST, campaign
"""
_FAILED = f"""
    SELECT DISTINCT campaign, machine, stack, benchmark, point_id, repeat, attempt, status,
           params, start
    FROM results WHERE status <> 'ok'
    ORDER BY machine, campaign, point_id, repeat, attempt LIMIT {MAX_FAILED}
"""


def collect(con) -> Dict[str, Any]:
    """The dashboard's data from a results store (``commstack.store.results.open_store``)."""
    series = history(con, {})
    names = _param_names(series)
    curves: Dict[tuple, Dict[str, Any]] = {}
    histories: List[Dict[str, Any]] = []
    for s in series:
        params = {k: v for k, v in s.key.items() if k in names}
        label = " ".join(f"{k}={params[k]}" for k in sorted(params)) or "-"
        base = {c: s.key.get(c) for c in ("machine", "stack", "benchmark", "test", "np", "mode",
                                           "metric")}
        base.update(label=label, unit=s.unit, lower_is_better=s.lower_is_better,
                    simulated=s.simulated)
        if s.key.get("row_key"):
            base["label"] = f"{label} {s.key['row_key']}"
        if s.simulated:  # said wherever the curve is named
            base["label"] += f" ({WORD} on {s.simulated})"
        histories.append(dict(base, bytes=s.key.get("bytes"), points=[
            dict(campaign=e.campaign, date=_iso(e.date), **_center(e), change=e.change,
                 unclean=e.unclean) for e in s.entries]))
        for e in s.entries:
            key = (json.dumps(base, sort_keys=True, default=str), e.campaign)
            curve = curves.setdefault(key, dict(base, campaign=e.campaign, date=_iso(e.date),
                                                origin=e.origin, mpi_version=e.identity.get(
                                                    "mpi_version"), points=[]))
            curve["points"].append(dict(bytes=s.key.get("bytes"), **_center(e),
                                        unclean=e.unclean))
    for curve in curves.values():
        curve["points"].sort(key=lambda p: (p["bytes"] is None, p["bytes"] or 0))
    campaigns = _dicts(con.execute(_CAMPAIGNS))
    for c in campaigns:
        c["first"], c["last"] = _iso(c["first"]), _iso(c["last"])
    failed = _dicts(con.execute(_FAILED))
    for f in failed:
        f["start"] = _iso(f["start"])
    return {"generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "campaigns": campaigns, "curves": list(curves.values()), "history": histories,
            "failed": failed, "failed_total": sum(c["failed"] for c in campaigns)}


def _param_names(series: Sequence[Series]) -> List[str]:
    """Parameters that differ between points (the others would only lengthen the labels)."""
    keys = sorted({k for s in series for k in s.key if k not in ROW_COLUMNS})
    return [k for k in keys
            if len({repr(s.key.get(k)) for s in series}) > 1]


def _center(entry) -> Dict[str, Any]:
    c = entry.center
    return {"n": c.n, "median": c.median, "low": c.low, "high": c.high}


def _iso(when) -> Any:
    if when is None:
        return None
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dicts(result) -> List[Dict[str, Any]]:
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def page(data: Dict[str, Any], title: str) -> str:
    """The whole page: Plotly's JS, the data and the page's own script, inlined."""
    require(*PLOTLY)
    from plotly.offline import get_plotlyjs

    payload = json.dumps(data, default=str, separators=(",", ":")).replace("</", "<\\/")
    return _TEMPLATE.format(title=html.escape(title), plotly=get_plotlyjs(), data=payload,
                            script=_SCRIPT)


def write(con, out: Path, title: str, search: Sequence[Path] = ()) -> Dict[str, int]:
    """index.html of the store ``con``; compare results of the campaigns under ``search``."""
    from commstack.compare_previous import comparisons

    data = collect(con)
    data["comparisons"] = comparisons(search) if search else []
    for row in data["comparisons"]:
        row["date"] = _iso(row["date"])
    out.mkdir(parents=True, exist_ok=True)
    text = page(data, title)
    from commstack.store.files import replace

    replace(out / "index.html", text.encode())
    return {"campaigns": len(data["campaigns"]), "curves": len(data["curves"]),
            "history": len(data["history"]), "failed": data["failed_total"],
            "comparisons": len(data["comparisons"]),
            "bytes": len(text.encode())}


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 1em 2em; color: #222; }}
select {{ margin-right: 1.5em; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
.bad {{ color: #b00; font-weight: bold; }}
.note {{ color: #555; font-size: 0.85em; }}
.plot {{ width: 100%; height: 460px; }}
</style>
<script>{plotly}</script>
</head><body>
<h1>{title}</h1>
<p class="note">Each value is the median of a campaign's repeats with its 95 % interval
(distribution-free; none below 6 repeats). Hollow markers: a run was unclean (oversubscribed,
or its placement contradicted the mapping asked for). Dotted lines with square markers: simulated,
not measured (a simulator's numbers, named "simulated on" their platform).
Generated <span id="generated"></span>.</p>
<div id="filters">
 <label>machine <select id="f-machine"></select></label>
 <label>stack <select id="f-stack"></select></label>
 <label>benchmark <select id="f-test"></select></label>
 <label>size (history) <select id="f-bytes"></select></label>
</div>
<p id="shown" class="note"></p>
<h2>Size curves</h2><div id="plot-sizes" class="plot"></div>
<h2>History</h2><div id="plot-history" class="plot"></div>
<h2>Campaigns</h2><table id="campaigns"></table>
<h2>Compare results</h2><p id="compare-note" class="note"></p><table id="comparisons"></table>
<h2>Failed runs</h2><p id="failed-note" class="note"></p><table id="failed"></table>
<script id="data" type="application/json">{data}</script>
<script>{script}</script>
</body></html>
"""

_SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('data').textContent);
const MAX_TRACES = 40;
const ALL = '(all)';
const NO_SIZE = '-';
function sizeOf(h) { return h.bytes === null ? NO_SIZE : String(h.bytes); }
function uniq(xs) { return [...new Set(xs.filter(x => x !== null && x !== undefined))].sort(); }
function fill(id, values, all) {
  const sel = document.getElementById(id);
  const keep = sel.value;
  sel.innerHTML = '';
  for (const v of (all ? [ALL] : []).concat(values)) {
    const o = document.createElement('option'); o.value = String(v); o.textContent = String(v);
    sel.appendChild(o);
  }
  if ([...sel.options].some(o => o.value === keep)) sel.value = keep;
}
function val(id) { return document.getElementById(id).value; }
function testOf(c) { return c.benchmark + (c.test && c.test !== 'None' ? ' ' + c.test : ''); }
function chosen(c) {
  return (val('f-machine') === ALL || c.machine === val('f-machine')) &&
         (val('f-stack') === ALL || c.stack === val('f-stack')) &&
         testOf(c) === val('f-test');
}
function errorBars(points) {
  return {type: 'data', symmetric: false, visible: true,
          array: points.map(p => p.high === null ? 0 : p.high - p.median),
          arrayminus: points.map(p => p.low === null ? 0 : p.median - p.low)};
}
function markers(points, simulated) {
  const shape = simulated ? 'square' : 'circle';
  return {size: 7, symbol: points.map(p => p.unclean ? shape + '-open' : shape)};
}
function line(c) { return c.simulated ? {dash: 'dot'} : {dash: 'solid'}; }
function short(text) { return text.length > 90 ? text.slice(0, 87) + '...' : text; }
// A simulated curve's name starts with its platform: never cut off by short().
function named(c, parts) {
  return (c.simulated ? 'simulated on ' + c.simulated + ' | ' : '') + short(parts.join(' | '));
}
function drawSizes() {
  const curves = DATA.curves.filter(chosen);
  const shown = curves.slice(0, MAX_TRACES);
  // A benchmark without message sizes (cartex's halo exchange): one value per setting.
  const sized = shown.some(c => c.points.some(p => p.bytes !== null));
  const traces = shown.map(c => ({
    x: sized ? c.points.map(p => p.bytes === null ? 0 : p.bytes) : [short(c.label)],
    y: c.points.map(p => p.median),
    error_y: errorBars(c.points), marker: markers(c.points, c.simulated), line: line(c),
    mode: sized ? 'lines+markers' : 'markers',
    name: named(c, [c.machine, c.stack, c.campaign, c.label]),
    hovertemplate: '%{x}: %{y} ' + (c.unit || '') + '<extra>' + c.campaign + '</extra>'}));
  const unit = curves.length ? (curves[0].metric + ' [' + (curves[0].unit || '') + ']') : '';
  Plotly.react('plot-sizes', traces, {
    margin: {t: 10}, showlegend: sized,
    xaxis: sized ? {title: {text: 'message size [bytes]'}, type: 'log'}
                 : {title: {text: 'setting'}, type: 'category', showticklabels: false},
    yaxis: {title: {text: unit}, type: sized ? 'log' : 'linear'},
    legend: {font: {size: 9}, orientation: 'h', y: -0.25}});
  return [shown.length, curves.length];
}
function drawHistory() {
  const size = val('f-bytes');
  const series = DATA.history.filter(h => chosen(h) && sizeOf(h) === size);
  const shown = series.slice(0, MAX_TRACES);
  const traces = [], shapes = [], notes = [];
  for (const h of shown) {
    const pts = h.points.filter(p => p.date !== null);
    traces.push({x: pts.map(p => p.date), y: pts.map(p => p.median), error_y: errorBars(pts),
                 marker: markers(pts, h.simulated), line: line(h), mode: 'lines+markers',
                 name: named(h, [h.machine, h.stack, h.label]),
                 text: pts.map(p => p.campaign + (p.change ? ' (stack change: ' + p.change + ')' : '')),
                 hovertemplate: '%{x}: %{y}<extra>%{text}</extra>'});
    for (const p of pts.filter(p => p.change)) {
      shapes.push({type: 'line', xref: 'x', yref: 'paper', x0: p.date, x1: p.date, y0: 0, y1: 1,
                   line: {color: '#b00', dash: 'dash', width: 1}});
      notes.push({x: p.date, y: 1, xref: 'x', yref: 'paper', text: 'stack change',
                  showarrow: false, font: {color: '#b00', size: 9}, yanchor: 'bottom'});
    }
  }
  Plotly.react('plot-history', traces, {margin: {t: 20}, shapes: shapes, annotations: notes,
    xaxis: {title: {text: 'run date (UTC)'}},
    yaxis: {title: {text: 'median' + (size === NO_SIZE ? '' : ', ' + size + ' bytes')}},
    legend: {font: {size: 9}, orientation: 'h', y: -0.25}});
  return [shown.length, series.length];
}
function table(id, rows, columns) {
  const t = document.getElementById(id);
  t.innerHTML = '<tr>' + columns.map(c => '<th>' + c + '</th>').join('') + '</tr>';
  for (const r of rows) {
    const tr = document.createElement('tr');
    for (const c of columns) {
      const td = document.createElement('td');
      td.textContent = r[c] === null || r[c] === undefined ? '' : String(r[c]);
      if ((c === 'failed' || c === 'unclean' || c === 'regressions') && r[c] > 0 ||
          (c === 'verdict' && r[c] === 'FAIL')) td.className = 'bad';
      tr.appendChild(td);
    }
    t.appendChild(tr);
  }
}
function refreshChoices() {
  const pool = DATA.curves.filter(c =>
    (val('f-machine') === ALL || c.machine === val('f-machine')) &&
    (val('f-stack') === ALL || c.stack === val('f-stack')));
  const tests = uniq(pool.map(testOf));
  const sel = document.getElementById('f-test');
  const first = !sel.options.length;
  fill('f-test', tests, false);
  if (first) {  // start on a benchmark with message sizes, where there is one
    const sized = tests.find(t => pool.some(c => testOf(c) === t && c.points.some(p => p.bytes !== null)));
    if (sized) sel.value = sized;
  }
  const found = DATA.history.filter(chosen).map(sizeOf);
  const sizes = uniq(found.filter(s => s !== NO_SIZE)).map(Number).sort((a, b) => a - b).map(String);
  fill('f-bytes', (found.includes(NO_SIZE) ? [NO_SIZE] : []).concat(sizes), false);
}
function draw() {
  refreshChoices();
  const [s, st] = drawSizes(), [h, ht] = drawHistory();
  document.getElementById('shown').textContent =
    'shown: ' + s + ' of ' + st + ' size curves, ' + h + ' of ' + ht + ' history series' +
    (st > s || ht > h ? ' (at most ' + MAX_TRACES + ' each: narrow the filters)' : '');
  const campaigns = DATA.campaigns.filter(c => val('f-machine') === ALL || c.machine === val('f-machine'));
  table('campaigns', campaigns,
        ['machine', 'campaign', 'runs', 'failed', 'unclean', 'first', 'last', 'mpi_version', 'imported',
         'simulated']);
  const compared = DATA.comparisons.filter(c => val('f-machine') === ALL || c.machine === val('f-machine'));
  table('comparisons', compared,
        ['machine', 'campaign', 'baseline', 'date', 'figures', 'regressions', 'improvements',
         'slowdown', 'verdict', 'simulated', 'worst']);
  document.getElementById('compare-note').textContent = DATA.comparisons.length ?
    'Each campaign against the one that ran its matrix before it, as commstack compare judges ' +
    'it: a regression is a figure slower by more than 5 % with a Mann-Whitney U test significant ' +
    'after Benjamini-Hochberg correction; slowdown: the campaign as a whole (Hodges-Lehmann ' +
    'estimate over paired passes); FAIL on a regression or a significant broad slowdown.' :
    'No campaign ran a matrix an earlier campaign ran: nothing to compare.';
  const failed = DATA.failed.filter(f => (val('f-machine') === ALL || f.machine === val('f-machine')) &&
                                         (val('f-stack') === ALL || f.stack === val('f-stack')));
  table('failed', failed,
        ['machine', 'campaign', 'stack', 'point_id', 'repeat', 'attempt', 'status', 'start', 'params']);
  document.getElementById('failed-note').textContent = DATA.failed_total + ' failed run(s) in all' +
    (DATA.failed.length < DATA.failed_total ? '; the first ' + DATA.failed.length + ' listed' : '');
}
document.getElementById('generated').textContent = DATA.generated;
fill('f-machine', uniq(DATA.curves.map(c => c.machine)), true);
fill('f-stack', uniq(DATA.curves.map(c => c.stack)), true);
for (const id of ['f-machine', 'f-stack', 'f-test', 'f-bytes'])
  document.getElementById(id).addEventListener('change', draw);
draw();
"""
